// "Did you mean" suggestions: the name at the smallest edit distance
// (Levenshtein) from what a person typed, when it is small for the word's length.

function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length]!;
}

/** " (did you mean X?)" for the nearest name within a third of the typed length (at least 2 edits), or "". */
export function didYouMean(typed: string, names: readonly string[], prefix = ""): string {
  const allowed = Math.max(2, Math.floor(typed.length / 3));
  let best: { name: string; d: number } | undefined;
  for (const name of names) {
    const d = distance(typed, name);
    if (d <= allowed && (!best || d < best.d)) best = { name, d };
  }
  return best ? ` (did you mean ${prefix}${best.name}?)` : "";
}
