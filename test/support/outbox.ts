// "Nothing more arrives" as a condition rather than a pause: once the
// organisation service's outbox holds no unpublished row, every event it will
// ever publish for what a test did is on the stream already (a row is marked
// published only after the broker's ack, and is never published again after).
import pg from "pg";

/** Unpublished outbox rows in the organisation schema of `databaseUrl` (a test file's own database). */
export async function unpublishedOutboxRows(databaseUrl: string): Promise<number> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const { rows } = await c.query<{ n: string }>(
      `select count(*) as n from organisation.outbox where published_at is null`,
    );
    return Number(rows[0]!.n);
  } finally {
    await c.end();
  }
}
