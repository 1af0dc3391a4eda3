// Values read when /metrics is scraped. A source registers while its owner
// runs; one that fails or is slow is left out of that scrape rather than failing it.

/** Resolves to [label value, number] pairs; the label is ignored by an unlabelled gauge. */
export type GaugeSource = () => Promise<[string, number][]>;

const SOURCE_TIMEOUT_MS = 1000;

export async function collectAll(sources: Set<GaugeSource>): Promise<[string, number][]> {
  const results = await Promise.allSettled(
    [...sources].map((read) =>
      Promise.race([
        read(),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error("timed out")), SOURCE_TIMEOUT_MS).unref()),
      ]),
    ),
  );
  return results.flatMap((r) => (r.status === "fulfilled" ? r.value : []));
}

export function addSource(sources: Set<GaugeSource>, source: GaugeSource): () => void {
  sources.add(source);
  return () => sources.delete(source);
}
