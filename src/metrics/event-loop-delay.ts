import { createHistogram, performance } from 'node:perf_hooks';
import { Gauge, Registry } from 'prom-client';

/** How often the delay is sampled, ms: a stall shorter than this may be seen only in part. */
const SAMPLE_EVERY_MS = 5;

/**
 * `event_loop_delay_seconds{quantile}`: how late the event loop ran a timer due every
 * SAMPLE_EVERY_MS, over the time since the last scrape: the median, the 99th percentile and the
 * longest (quantile 1), so an idle loop reads about 0. A request that arrives during a delay waits
 * it out. Timed here rather than by perf_hooks' monitorEventLoopDelay, whose reset (at each scrape)
 * forgets its last tick: a stall that began before its next tick went unseen. prom-client's own
 * `nodejs_eventloop_lag_*` series sample every 10 ms and count that interval in each value.
 * `stop` ends the sampling (the app closes).
 */
export function eventLoopDelay(registry: Registry): { stop(): void } {
  const histogram = createHistogram();
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    // Nanoseconds late, at least 1 (what the histogram takes).
    histogram.record(Math.max(1, Math.round((now - last - SAMPLE_EVERY_MS) * 1e6)));
    last = now;
  }, SAMPLE_EVERY_MS);
  timer.unref();
  new Gauge({
    name: 'event_loop_delay_seconds',
    help: `How late the event loop ran a timer due every ${SAMPLE_EVERY_MS} ms since the last scrape: median, 99th percentile, longest (quantile 1)`,
    labelNames: ['quantile'] as const,
    registers: [registry],
    collect() {
      if (histogram.count === 0) return; // nothing sampled yet: no figure rather than a false 0
      this.set({ quantile: '0.5' }, histogram.percentile(50) / 1e9);
      this.set({ quantile: '0.99' }, histogram.percentile(99) / 1e9);
      this.set({ quantile: '1' }, histogram.max / 1e9);
      histogram.reset();
    },
  });
  return { stop: () => clearInterval(timer) };
}
