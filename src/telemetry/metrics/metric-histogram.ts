/**
 * A histogram counted in plain numbers on the path that observes it (no label hashing per observation,
 * which prom-client's own `Histogram.observe` does), and read in prom-client's form when scraped.
 */
export class Buckets {
  /** Observations at or below each bound (not cumulative), then those above the last. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

/** One series of a histogram metric: its labels and its buckets. */
export interface HistogramSeries {
  readonly labels: Readonly<Record<string, string | number>>;
  readonly buckets: Buckets;
}

/** A value of a metric as prom-client's registry formats it. */
interface MetricValue {
  readonly labels: Record<string, string | number>;
  readonly value: number;
  readonly metricName: string;
}

/**
 * A histogram metric for a prom-client registry (`registry.registerMetric`), whose series `series()` gives
 * at each scrape: what a prom-client `Histogram` reports (`_bucket` with `le`, cumulative; `_sum`; `_count`).
 */
export class HistogramMetric {
  readonly type = 'histogram';
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly series: () => Iterable<HistogramSeries>,
  ) {}

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: MetricValue[] }> {
    const values: MetricValue[] = [];
    for (const { labels, buckets } of this.series()) values.push(...this.valuesOf(labels, buckets));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  private valuesOf(labels: Readonly<Record<string, string | number>>, b: Buckets): MetricValue[] {
    const out: MetricValue[] = [];
    const bucket = `${this.name}_bucket`;
    let cumulative = 0;
    for (let i = 0; i <= b.bounds.length; i++) {
      cumulative += b.counts[i]!;
      const le = i < b.bounds.length ? b.bounds[i]! : '+Inf';
      out.push({ labels: { ...labels, le }, value: cumulative, metricName: bucket });
    }
    out.push({ labels: { ...labels }, value: b.sum, metricName: `${this.name}_sum` });
    out.push({ labels: { ...labels }, value: b.count, metricName: `${this.name}_count` });
    return out;
  }

  /** The series are the app's own counts: a registry's `resetMetrics()` leaves them. */
  reset(): void {}
}
