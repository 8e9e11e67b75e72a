"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.CountsOf = exports.KeyedHistogram = void 0;
class KeyedHistogram {
    constructor(name, help, bounds, registry) {
        this.name = name;
        this.help = help;
        this.bounds = bounds;
        this.type = 'histogram';
        this.aggregator = 'sum';
        this.series = new Map();
        registry.registerMetric(this);
    }
    of(key, labels) {
        let figures = this.series.get(key);
        if (!figures) {
            const { bounds } = this;
            const made = {
                labels: labels(),
                buckets: new Array(bounds.length + 1).fill(0),
                sum: 0,
                count: 0,
                observe(value) {
                    let i = 0;
                    while (i < bounds.length && value > bounds[i])
                        i++;
                    made.buckets[i]++;
                    made.sum += value;
                    made.count++;
                },
            };
            this.series.set(key, (figures = made));
        }
        return figures;
    }
    counts() {
        return [...this.series.values()];
    }
    get() {
        const values = [];
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
    reset() {
        this.series.clear();
    }
}
exports.KeyedHistogram = KeyedHistogram;
class CountsOf {
    constructor(name, help, histogram, registry) {
        this.name = name;
        this.help = help;
        this.histogram = histogram;
        this.type = 'counter';
        this.aggregator = 'sum';
        registry.registerMetric(this);
    }
    get() {
        const values = this.histogram.counts().map(({ labels, count }) => ({ labels, value: count }));
        return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
    }
    reset() { }
}
exports.CountsOf = CountsOf;
//# sourceMappingURL=keyed-histogram.js.map