// The outbox relay's statements (relay.ts) on a service's outbox table.
import type { MikroORM } from "@mikro-orm/postgresql";

export type OutboxRow = {
  id: string;
  seq: string;
  subject: string;
  payload: Buffer;
  traceparent: string | null;
  tracestate: string | null;
};

const COLUMNS = `"id", "seq"::text as "seq", "subject", "payload", "traceparent", "tracestate"`;

export class OutboxRows {
  /** The oldest unsent rows but `deferred`, in seq order, at most `limit`. */
  readonly readUnsent: (deferred: string[], limit: number) => Promise<OutboxRow[]>;
  readonly markSent: (ids: string[]) => Promise<void>;
  private pendingRead?: Promise<{ n: number; age: number }>;

  /** `preparedStatements`: a round's statements as prepared statements (relay-database.ts). */
  constructor(
    private readonly orm: MikroORM,
    private readonly schema: string,
    preparedStatements: boolean,
  ) {
    // A round's statements skip the ORM's per-query work (knex's raw); pg makes a named one prepared.
    const knex = orm.em.getKnex();
    const named = (name: string) => (preparedStatements ? { name } : {});
    const read = `select ${COLUMNS} from "${schema}"."outbox"
        where "published_at" is null and "id" <> all(?::uuid[]) order by "outbox"."seq" limit ?::int`;
    this.readUnsent = async (deferred, limit) =>
      (await knex.raw<{ rows: OutboxRow[] }>(read, [deferred, limit]).options(named(`outbox-read-${schema}`))).rows;
    const mark = `update "${schema}"."outbox" set "published_at" = now() where "id" = any(?::uuid[])`;
    this.markSent = async (ids) => {
      await knex.raw(mark, [ids]).options(named(`outbox-mark-${schema}`));
    };
  }

  /** Those of `ids` still unsent, in seq order. */
  readStillUnsent(ids: string[]): Promise<OutboxRow[]> {
    return this.orm.em.fork().execute(
      `select ${COLUMNS} from "${this.schema}"."outbox"
            where "id" in (${ids.map(() => "?").join(",")}) and "published_at" is null order by "outbox"."seq"`,
      ids,
    );
  }

  /** Unsent rows and the age of the oldest, from the unsent-rows index; one query serves both gauges of a scrape. */
  pending(): Promise<{ n: number; age: number }> {
    this.pendingRead ??= this.orm.em
      .fork()
      .execute(
        `select count(*)::int as "n", coalesce(extract(epoch from now() - min("created_at")), 0)::float8 as "age"
           from "${this.schema}"."outbox" where "published_at" is null`,
      )
      .then(([row]) => ({ n: row.n as number, age: row.age as number }))
      .finally(() => setTimeout(() => (this.pendingRead = undefined), 0).unref());
    return this.pendingRead;
  }

  /** Deletes the rows sent more than `hours` ago. */
  async deleteSent(hours: number): Promise<void> {
    await this.orm.em
      .fork()
      .execute(`delete from "${this.schema}"."outbox" where "published_at" < now() - make_interval(hours => ?)`, [
        hours,
      ]);
  }
}
