// The organisation service as its own process on a fresh database of this
// machine's PostgreSQL and NATS JetStream (a unique stream), with one
// organisation in it: what the RPC rows of the benchmark call.
import { randomBytes } from "node:crypto";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { createRpcClient } from "../services/shared/rpc/client.js";
import { createDatabaseOn } from "../test/support/backends.js";
import { deleteStream } from "../test/support/stream.js";
import { freePort, httpReady, spawnProcess, type Spawned } from "../test/support/processes.js";

export const ADMIN_DATABASE_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
export const NATS_URL = process.env.BENCH_NATS_URL ?? "nats://127.0.0.1:4222";

export interface RpcTarget {
  url: string;
  token: string;
  databaseUrl: string;
  organisationId: string;
  service: Spawned;
  close(): Promise<void>;
}

/** `nodeArgs` go before the script (e.g. --cpu-prof); `cwd`: another checkout's service (a before/after comparison). */
export async function startRpcTarget(
  nodeArgs: string[] = [],
  env: Record<string, string> = {},
  cwd?: string,
): Promise<RpcTarget> {
  const suffix = `${Date.now().toString(36)}${randomBytes(3).toString("hex")}`;
  const stream = `BENCH_${suffix}`;
  const db = await createDatabaseOn(ADMIN_DATABASE_URL, `bizcard_bench_${suffix}`);
  const port = await freePort();
  const token = randomBytes(32).toString("base64url");
  const service = spawnProcess(
    process.execPath,
    [...nodeArgs, "--import", "tsx", "services/organisation/main.ts"],
    {
      DATABASE_URL: db.url,
      NATS_URL,
      NATS_STREAM: stream,
      NATS_SUBJECT_PREFIX: `bench${suffix}`,
      ORGANISATION_RPC_PORT: String(port),
      INTERNAL_RPC_TOKEN: token,
      LOG_LEVEL: "info",
      ...env,
    },
    cwd,
  );
  const url = `http://127.0.0.1:${port}`;
  const close = async () => {
    await service.kill();
    await deleteStream(NATS_URL, stream).catch(() => undefined);
    await db.drop();
  };
  try {
    await httpReady(`${url}/readyz`, 60_000, service);
    const client = createRpcClient(OrganisationService, { baseUrl: url, timeoutMs: 5000, internalToken: token });
    const { organisation } = await client.createOrganisation({
      name: "Bench Cards",
      ownerEmail: "owner@bench.test",
      ownerPassword: "bench-password",
    });
    return { url, token, databaseUrl: db.url, organisationId: organisation!.id, service, close };
  } catch (err) {
    await close();
    throw err;
  }
}
