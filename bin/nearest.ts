// The nearest of some names to what a person typed, for "did you mean"
// suggestions: the smallest edit distance (Levenshtein: insertions,
// deletions, substitutions), when it is small for the word's length.

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

/** The name nearest to `typed`, or undefined when none is within a third of its length (at least 2 edits). */
export function nearest(typed: string, names: readonly string[]): string | undefined {
  const allowed = Math.max(2, Math.floor(typed.length / 3));
  let best: { name: string; d: number } | undefined;
  for (const name of names) {
    const d = distance(typed, name);
    if (d <= allowed && (!best || d < best.d)) best = { name, d };
  }
  return best?.name;
}

/** " (did you mean X?)" for the nearest name, or "". */
export const didYouMean = (typed: string, names: readonly string[], prefix = ""): string => {
  const found = nearest(typed, names);
  return found ? ` (did you mean ${prefix}${found}?)` : "";
};
