// The gateway's request histogram (services/shared/metrics/series-histogram.ts)
// exposes what prom-client's own Histogram exposes for the same observations:
// the same series, cumulative buckets, +Inf, _sum and _count, in a registry's
// text and JSON.
import client from "prom-client";
import { expect, it } from "vitest";
import { SeriesHistogram } from "../../services/shared/metrics/series-histogram.js";

const BUCKETS = [0.001, 0.01, 0.1, 1];
const OBSERVED: [string, string, number, number][] = [
  ["GET", "/oauth/me", 200, 0.0004],
  ["GET", "/oauth/me", 200, 0.001], // on a bound: counted in that bucket
  ["GET", "/oauth/me", 200, 0.05],
  ["GET", "/oauth/me", 401, 0.002],
  ["POST", "/oauth/token", 200, 2.5], // above every bound: +Inf only
  ["GET", "unmatched", 404, 0.0001],
];

/** Each series line of a registry's text, label order aside, sorted. */
function series(text: string): string[] {
  return text
    .split("\n")
    .filter((line) => line && !line.startsWith("#"))
    .map((line) => {
      const m = /^(\w+)(?:\{(.*)\})? (.+)$/.exec(line)!;
      const labels = (m[2] ?? "").split(",").filter(Boolean).sort().join(",");
      return `${m[1]}{${labels}} ${Number(m[3])}`;
    })
    .sort();
}

it("exposes the series prom-client's Histogram exposes for the same observations", async () => {
  const ours = new client.Registry();
  const theirs = new client.Registry();
  const fast = new SeriesHistogram("req_seconds", "Requests.", BUCKETS);
  ours.registerMetric(fast as unknown as client.Metric);
  const reference = new client.Histogram({ name: "req_seconds", help: "Requests.", labelNames: ["method", "route", "status"], buckets: BUCKETS, registers: [theirs] });
  for (const [method, route, status, value] of OBSERVED) {
    fast.observe(`${method} ${route} ${status}`, () => ({ method, route, status }), value);
    reference.observe({ method, route, status }, value);
  }
  const text = await ours.metrics();
  expect(text).toContain("# HELP req_seconds Requests.\n# TYPE req_seconds histogram\n");
  expect(series(text)).toEqual(series(await theirs.metrics()));
  expect(text).toMatch(/^req_seconds_count\{method="GET",route="\/oauth\/me",status="200"\} 3$/m);
  expect(series(text)).toContain('req_seconds_bucket{le="0.001",method="GET",route="/oauth/me",status="200"} 2');
  // The JSON a registry answers (the in-process scrape of /metrics merges these) holds the same values.
  const [family] = await ours.getMetricsAsJSON();
  const [reference_] = await theirs.getMetricsAsJSON();
  expect(family!.type).toBe(reference_!.type);
  expect(new Set(family!.values.map((v) => JSON.stringify(v)))).toEqual(new Set(reference_!.values.map((v) => JSON.stringify({ metricName: (v as { metricName?: string }).metricName, labels: v.labels, value: v.value }))));
  fast.reset();
  expect(series(await ours.metrics())).toEqual([]);
});
