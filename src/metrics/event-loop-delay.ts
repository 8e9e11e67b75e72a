import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Gauge, Registry } from 'prom-client';

/** How often the delay is sampled, ms: a stall shorter than this may be seen only in part. */
const SAMPLE_EVERY_MS = 5;

/**
 * `event_loop_delay_seconds{quantile}`: how late the event loop ran a timer due every
 * SAMPLE_EVERY_MS, over the time since the last scrape: the median, the 99th percentile and the
 * longest (quantile 1), each net of the sampling interval, so an idle loop reads 0. A request that
 * arrives during a delay waits it out. prom-client's own `nodejs_eventloop_lag_*` series sample
 * every 10 ms and count that interval in each value. `stop` ends the sampling (the app closes).
 */
export function eventLoopDelay(registry: Registry): { stop(): void } {
  const histogram = monitorEventLoopDelay({ resolution: SAMPLE_EVERY_MS });
  histogram.enable();
  const net = (nanoseconds: number) => Math.max(0, nanoseconds / 1e9 - SAMPLE_EVERY_MS / 1000);
  new Gauge({
    name: 'event_loop_delay_seconds',
    help: `How late the event loop ran a timer due every ${SAMPLE_EVERY_MS} ms since the last scrape, net of that interval: median, 99th percentile, longest (quantile 1)`,
    labelNames: ['quantile'] as const,
    registers: [registry],
    collect() {
      if (histogram.count === 0) return; // nothing sampled yet: no figure rather than a false 0
      this.set({ quantile: '0.5' }, net(histogram.percentile(50)));
      this.set({ quantile: '0.99' }, net(histogram.percentile(99)));
      this.set({ quantile: '1' }, net(histogram.max));
      histogram.reset();
    },
  });
  return { stop: () => histogram.disable() };
}
