// A histogram for the gateway's hot path: the same family, buckets and
// exposition as prom-client's Histogram (it is registered on prom-client's
// registry, which writes it), but each label set's series is found by one
// string key the caller already has ("GET /oauth/me 200"), not by hashing a
// labels object on every observation as prom-client's observe() does (3-4 %
// of a cached GET /oauth/me's CPU under `npm start`). test/unit/series-histogram.test.ts
// checks that it exposes what prom-client's Histogram exposes for the same
// observations.
import type client from "prom-client";

interface Series {
  labels: Record<string, string | number>;
  /** Observations per bucket (not cumulative); the last is above every bound (+Inf only). Their total is _count. */
  counts: Float64Array;
  sum: number;
}

/** A value as prom-client's registry reads it from a metric's get(). */
type Value = client.MetricValueWithName<string>;

/** What get() answers, as prom-client's Histogram does (its typings call `type` an enum; at run time it is this string). */
interface Family {
  name: string;
  help: string;
  type: "histogram";
  aggregator: "sum";
  values: Value[];
}

export class SeriesHistogram {
  readonly type = "histogram" as const;
  readonly aggregator = "sum" as const;
  private series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly upperBounds: readonly number[],
  ) {}

  /**
   * Counts `value` in the series named `key`; `labels` makes its labels the
   * first time the key is seen (the same key must always mean the same labels).
   */
  observe(key: string, labels: () => Record<string, string | number>, value: number): void {
    let series = this.series.get(key);
    if (!series) this.series.set(key, (series = { labels: labels(), counts: new Float64Array(this.upperBounds.length + 1), sum: 0 }));
    let bucket = 0;
    while (bucket < this.upperBounds.length && value > this.upperBounds[bucket]!) bucket++;
    series.counts[bucket]! += 1;
    series.sum += value;
  }

  /** What prom-client's registry writes (and getMetricsAsJSON answers): cumulative buckets, +Inf, _sum, _count. */
  async get(): Promise<Family> {
    const values: Value[] = [];
    for (const { labels, counts, sum } of this.series.values()) {
      let cumulative = 0;
      this.upperBounds.forEach((le, i) => {
        cumulative += counts[i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { le, ...labels }, value: cumulative });
      });
      const count = cumulative + counts[this.upperBounds.length]!;
      values.push({ metricName: `${this.name}_bucket`, labels: { le: "+Inf", ...labels }, value: count });
      values.push({ metricName: `${this.name}_sum`, labels: { ...labels }, value: sum });
      values.push({ metricName: `${this.name}_count`, labels: { ...labels }, value: count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.series = new Map();
  }
}
