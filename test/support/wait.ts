// Waiting for a state no public API reports: a request of the embedded
// database (scripts/embedded/pglite-server.ts) held back for the session.
import { vi } from "vitest";
import { SessionQueue } from "../../scripts/embedded/pglite-server.js";
import { waitFor } from "./processes.js";

/**
 * Watches the embedded databases' session queues from now on. `held()`
 * resolves once a message sent since waits in one of them, as a connection's
 * does while another connection's transaction has the session: it is not
 * answered before that transaction ends. The watch ends with held().
 */
export function watchSessionQueue(): { held(): Promise<void> } {
  const enqueue = vi.spyOn(SessionQueue.prototype, "enqueue");
  return {
    held: async () => {
      try {
        const queues = () => enqueue.mock.contexts as SessionQueue[];
        const held = () => (queues().some((q) => q.getQueueLength() > 0) ? true : undefined);
        await waitFor(held, 10_000, "a request waiting for the session");
      } finally {
        enqueue.mockRestore();
      }
    },
  };
}
