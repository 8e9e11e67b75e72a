import type { Metric, MetricValueWithName, Registry } from 'prom-client';

/** What prom-client's registry reads from a metric when it is scraped. */
interface Scraped {
  name: string;
  help: string;
  type: string;
  values: (MetricValueWithName<string> & { sharedLabels?: Record<string, string> })[];
  aggregator: string;
}

/** One label set's figures: what `observe` counts into. */
export interface Series {
  observe(value: number): void;
}

interface Figures<L extends string> extends Series {
  labels: Record<L, string>;
  /** Observations per bucket, not yet cumulative; the last is those above every bound. */
  buckets: number[];
  sum: number;
  count: number;
}

/**
 * A Prometheus histogram whose series are found by one string key the caller builds. prom-client's
 * own Histogram validates and hashes the labels again on every observation, even through a child
 * from `labels()`: about 3% of a read's CPU, more on writes, which time several store calls.
 * Scraped through prom-client's registry, which formats it as it formats its own (the unit test
 * holds the two texts equal).
 */
export class KeyedHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, Figures<L>>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series of `key`, which must stand for `labels()` alone: `labels` is called only the first time. */
  of(key: string, labels: () => Record<L, string>): Series {
    let figures = this.series.get(key);
    if (!figures) {
      const { bounds } = this;
      const made: Figures<L> = {
        labels: labels(),
        buckets: new Array<number>(bounds.length + 1).fill(0),
        sum: 0,
        count: 0,
        observe(value: number) {
          let i = 0;
          while (i < bounds.length && value > bounds[i]) i++;
          made.buckets[i]++;
          made.sum += value;
          made.count++;
        },
      };
      this.series.set(key, (figures = made));
    }
    return figures;
  }

  /** Each series' label set and count: a counter of the same events reads these instead of counting again. */
  counts(): { labels: Record<L, string>; count: number }[] {
    return [...this.series.values()];
  }

  get(): Promise<Scraped> {
    // Laid out as prom-client lays out its own: the series' labels as `sharedLabels`, after `le`.
    const values: Scraped['values'] = [];
    for (const { labels: sharedLabels, buckets, sum, count } of this.series.values()) {
      let below = 0;
      this.bounds.forEach((le, i) => {
        below += buckets[i];
        values.push({ metricName: `${this.name}_bucket`, labels: { le }, sharedLabels, value: below });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf' }, sharedLabels, value: count });
      values.push({ metricName: `${this.name}_sum`, labels: {}, sharedLabels, value: sum });
      values.push({ metricName: `${this.name}_count`, labels: {}, sharedLabels, value: count });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }

  reset(): void {
    this.series.clear();
  }
}

/** A counter that is a histogram's counts, under a name of its own. */
export class CountsOf<L extends string> {
  readonly type = 'counter';
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly histogram: KeyedHistogram<L>,
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  get(): Promise<Scraped> {
    const values = this.histogram.counts().map(({ labels, count }) => ({ labels, value: count }));
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }

  reset(): void {}
}
