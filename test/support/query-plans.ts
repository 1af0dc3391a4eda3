// What the plan tests read: one service's schema migrated alone on a fresh
// database (nothing else running), and PostgreSQL's plans as EXPLAIN (FORMAT
// JSON) gives them, flattened to their nodes.
import type { MikroORM } from "@mikro-orm/postgresql";
import { openServiceDatabase } from "../../services/shared/database.js";
import { createLogger } from "../../services/shared/logger.js";
import { createTestDatabase } from "./backends.js";

export interface PlanNode {
  "Node Type": string;
  "Index Name"?: string;
  "Relation Name"?: string;
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  "Rows Removed by Filter"?: number;
  Plans?: PlanNode[];
}

/** A plan's nodes, the root first, depth first. */
export const planNodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(planNodes)];

/** The nodes of an EXPLAIN (FORMAT JSON) answer's one row. */
export const explained = (rows: { "QUERY PLAN": [{ Plan: PlanNode }] }[]): PlanNode[] =>
  planNodes(rows[0]!["QUERY PLAN"][0].Plan);

export interface MigratedSchema {
  orm: MikroORM;
  close(): Promise<void>;
}

/** A fresh database with `service`'s migrations applied, on one connection. */
export async function migratedSchema(service: Parameters<typeof openServiceDatabase>[1]): Promise<MigratedSchema> {
  const db = await createTestDatabase();
  const orm = await openServiceDatabase(
    {
      databaseUrl: db.url,
      databasePoolMax: 1,
      logger: createLogger("test", "silent"),
      config: { MIGRATE_ON_START: true },
    },
    service,
  ).catch(async (err: unknown) => {
    await db.drop();
    throw err;
  });
  return {
    orm,
    async close() {
      await orm.close();
      await db.drop();
    },
  };
}
