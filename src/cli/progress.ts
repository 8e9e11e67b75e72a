import type { RebuildProgress } from '../projections/rebuild';
import { count, duration } from './output';

const BAR_WIDTH = 24;
const TTY_EVERY_MS = 100;
const LINE_EVERY_MS = 2000;

/**
 * A rebuild's progress on stderr: a bar redrawn in place on a terminal, a line every few seconds
 * otherwise (logs, pipes), so stdout stays for the result.
 */
export class ProgressReporter {
  private readonly started = Date.now();
  private last = 0;
  private drawn = false;

  constructor(private readonly stream: NodeJS.WriteStream = process.stderr) {}

  /** `final` gives the time the work took, when the caller knows it better (a rebuild ends with a grace period). */
  update(progress: RebuildProgress, final?: { ms: number }): void {
    const now = Date.now();
    const every = this.stream.isTTY ? TTY_EVERY_MS : LINE_EVERY_MS;
    // The swap is its own step (the indexes are built then): always shown, however recent the last line.
    if (!final && !progress.swapping && now - this.last < every) return;
    this.last = now;
    const { projection, done, total } = progress;
    const seconds = (final ? final.ms : now - this.started) / 1000;
    const rate = seconds > 0 ? done / seconds : 0;
    const figures = final
      ? `${count(done)} events in ${duration(seconds)}, ${count(rate)} events/s`
      : `${count(done)}${total === null ? '' : `/${count(total)}`} events  ${
          progress.swapping
            ? 'building the indexes and swapping in'
            : `${count(rate)} events/s${total === null ? '' : `  ${duration(rate > 0 ? (total - done) / rate : Infinity)} left`}`
        }`;
    if (total === null && !final) {
      // The event store cannot count what is left (EventStoreDB): no bar, no share, no estimate.
      this.stream.write(this.stream.isTTY ? `\r\x1b[K${projection} ${figures}` : `${projection}: ${figures}\n`);
      this.drawn = this.stream.isTTY === true;
      return;
    }
    const share = total !== null && total > 0 ? done / total : 1;
    if (this.stream.isTTY) {
      const filled = Math.round(share * BAR_WIDTH);
      const bar = `[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}]`;
      this.stream.write(`\r\x1b[K${projection} ${bar} ${Math.floor(share * 100)}%  ${figures}${final ? '\n' : ''}`);
      this.drawn = !final;
    } else {
      this.stream.write(`${projection}: ${final ? 'done' : `${Math.floor(share * 100)}%`}  ${figures}\n`);
    }
  }

  /** Ends a bar left mid-line (an interruption), so the next message starts on its own line. */
  end(): void {
    if (this.drawn) this.stream.write('\n');
    this.drawn = false;
  }
}
