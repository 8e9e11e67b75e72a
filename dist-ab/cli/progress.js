"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.ProgressReporter = void 0;
const output_1 = require("./output");
const BAR_WIDTH = 24;
const TTY_EVERY_MS = 100;
const LINE_EVERY_MS = 2000;
class ProgressReporter {
    constructor(stream = process.stderr) {
        this.stream = stream;
        this.started = Date.now();
        this.last = 0;
        this.drawn = false;
    }
    update(progress, final) {
        const now = Date.now();
        const every = this.stream.isTTY ? TTY_EVERY_MS : LINE_EVERY_MS;
        if (!final && !progress.swapping && now - this.last < every)
            return;
        this.last = now;
        const { projection, done, total } = progress;
        const seconds = (final ? final.ms : now - this.started) / 1000;
        const rate = seconds > 0 ? done / seconds : 0;
        const figures = final
            ? `${(0, output_1.count)(done)} events in ${(0, output_1.duration)(seconds)}, ${(0, output_1.count)(rate)} events/s`
            : `${(0, output_1.count)(done)}${total === null ? '' : `/${(0, output_1.count)(total)}`} events  ${progress.swapping
                ? 'building the indexes and swapping in'
                : `${(0, output_1.count)(rate)} events/s${total === null ? '' : `  ${(0, output_1.duration)(rate > 0 ? (total - done) / rate : Infinity)} left`}`}`;
        if (total === null && !final) {
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
        }
        else {
            this.stream.write(`${projection}: ${final ? 'done' : `${Math.floor(share * 100)}%`}  ${figures}\n`);
        }
    }
    end() {
        if (this.drawn)
            this.stream.write('\n');
        this.drawn = false;
    }
}
exports.ProgressReporter = ProgressReporter;
//# sourceMappingURL=progress.js.map