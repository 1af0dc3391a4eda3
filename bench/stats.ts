// The bench's one statistic of repeated measurements: each row is its median
// round or pass (this machine's speed moves between minutes; a mean would
// carry one slow round into the row).

/** The middle value (the upper of the two middles for an even count); `xs` is left as it is. */
export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
