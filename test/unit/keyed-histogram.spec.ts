import { Counter, Histogram, Registry } from 'prom-client';
import { CountsOf, KeyedHistogram } from '../../src/metrics/keyed-histogram';

/** The same observations through prom-client's own metrics and through ours: the scraped texts must be the same. */
describe('KeyedHistogram', () => {
  const BOUNDS = [0.001, 0.01, 0.1, 1];
  const observations: [Record<'method' | 'route', string>, number][] = [
    [{ method: 'GET', route: '/v1/customers/:id' }, 0.0005],
    [{ method: 'GET', route: '/v1/customers/:id' }, 0.001],
    [{ method: 'GET', route: '/v1/customers/:id' }, 0.05],
    [{ method: 'POST', route: 'a "quoted"\\route\nline' }, 3],
    [{ method: 'GET', route: '/v1/customers/:id' }, 0.0100001],
  ];
  const registry = (kind: 'ours' | 'theirs') => {
    const r = new Registry();
    r.setDefaultLabels({ service_instance: 'i-1' });
    const names = { name: 'request_seconds', help: 'Seconds of a "request"\\n' };
    if (kind === 'theirs') {
      const histogram = new Histogram({ ...names, labelNames: ['method', 'route'], buckets: BOUNDS, registers: [r] });
      const counter = new Counter({ name: 'requests_total', help: 'Requests', labelNames: ['method', 'route'], registers: [r] });
      for (const [labels, value] of observations) {
        histogram.observe(labels, value);
        counter.inc(labels);
      }
    } else {
      const histogram = new KeyedHistogram<'method' | 'route'>(names.name, names.help, BOUNDS, r);
      new CountsOf('requests_total', 'Requests', histogram, r);
      for (const [labels, value] of observations) histogram.of(`${labels.method} ${labels.route}`, () => labels).observe(value);
    }
    return r;
  };

  it('scrapes as prom-client’s Histogram and Counter do, fed the same values', async () => {
    const ours = await registry('ours').metrics();
    expect(ours).toContain('request_seconds_bucket{le="0.01",service_instance="i-1",method="GET",route="/v1/customers/:id"} 2');
    expect(ours).toContain('requests_total{method="GET",route="/v1/customers/:id",service_instance="i-1"} 4');
    expect(ours).toBe(await registry('theirs').metrics());
  });

  it('calls for the labels once per key, and starts again from nothing when the registry is reset', async () => {
    const r = new Registry();
    const histogram = new KeyedHistogram<'route'>('h', 'help', BOUNDS, r);
    const labels = jest.fn(() => ({ route: '/a' }));
    histogram.of('a', labels).observe(0.5);
    histogram.of('a', labels).observe(2);
    expect(labels).toHaveBeenCalledTimes(1);
    expect(await r.metrics()).toContain('h_count{route="/a"} 2');
    r.resetMetrics();
    expect(await r.metrics()).not.toContain('h_count');
  });
});
