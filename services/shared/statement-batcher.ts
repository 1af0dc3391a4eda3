// Calls that share statements: a call that finds fewer than `atOnce`
// statements running starts one at once, alone (nothing waits for company);
// calls that arrive while `atOnce` run wait and go together in the next one,
// at most `max` to a statement. Under load, one round trip and one commit
// serve many calls; idle, none waits. Used by client authentication, token
// issue and introspection (auth) and CreateContact (organisation).
export interface Queued<I, O> {
  item: I;
  resolve(answer: O): void;
  reject(err: unknown): void;
}

export interface StatementBatcherOptions<I, O> {
  /** Statements running at once: one by default, so that the next batch forms while it runs. */
  atOnce?: number;
  /** Calls in one statement at most (64 by default). */
  max?: number;
  /** Runs one statement for the batch and settles each call; a throw rejects every call it left unsettled. */
  write(batch: Queued<I, O>[]): Promise<void>;
}

export function statementBatcher<I, O>(o: StatementBatcherOptions<I, O>): (item: I) => Promise<O> {
  const { atOnce = 1, max = 64 } = o;
  const queue: Queued<I, O>[] = [];
  let running = 0;
  const flush = () => {
    while (running < atOnce && queue.length > 0) {
      const batch = queue.splice(0, max);
      running++;
      o.write(batch)
        .catch((err: unknown) => batch.forEach((q) => q.reject(err)))
        .finally(() => {
          running--;
          flush();
        });
    }
  };
  return (item) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      flush();
    });
}
