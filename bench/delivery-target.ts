// What the delivery rows of the benchmark run: the platform as
// `npm start` runs it (scripts/start.ts, one process) on this machine's
// PostgreSQL (a fresh database, dropped after) and NATS JetStream (a unique
// stream, deleted after), with one organisation and one subscription of
// contact.created per receiver path; and a local receiver in this process
// answering 200 at once, which notes when each contact arrived.
//
// A contact's commit time is when CreateContact returned to this process; its
// arrival, when the receiver had the whole POST. Contacts are created (bench/contact-caller.ts) open
// loop: at a fixed rate whatever the answers (each call started on its
// schedule), or as a burst (all of them at once, 32 calls in flight).
import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { EventType } from "../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService } from "../gen/bizcard/webhook/v1/webhook_pb.js";
import { createRpcClient } from "../services/shared/rpc/client.js";
import { createDatabaseOn } from "../test/support/backends.js";
import { httpReady, platformPorts, spawnProcess, type Spawned } from "../test/support/processes.js";
import { PLATFORM_ENV } from "../scripts/platform-processes.js";
import { deleteStream } from "../test/support/stream.js";
import { ADMIN_DATABASE_URL, NATS_URL } from "./rpc-target.js";
import { startRunCost, type RunCost } from "./run-cost.js";
import { contactCaller } from "./contact-caller.js";
import { childProcesses, compiledBuild, DISTRIBUTED, LAYOUT, platformArgs } from "./platform-layout.js";

export interface DeliveryRun {
  events: number;
  subscriptions: number;
  /** The organisations the events went round (each with its own subscriptions). */
  organisations: number;
  /** CreateContact calls that failed (e.g. past their 10 s deadline when the platform falls behind an open loop). */
  failed: number;
  /** Deliveries that arrived (each event × its subscriptions). */
  arrived: number;
  /** Events per second made (calls started → last commit). */
  eventsPerSecond: number;
  /** Deliveries per second, from the first commit to the last arrival. */
  deliveriesPerSecond: number;
  /** Commit to arrival, ms. */
  p50: number;
  p95: number;
  p99: number;
  max: number;
  /** Per event, from the first call to the last arrival: CPU and WAL (run-cost.ts). */
  cost?: RunCost;
  /** Per delivery, epoch ms (performance.timeOrigin-based): for stage timings against the database's timestamps. */
  samples: { contactId: string; committedAt: number; arrivedAt: number }[];
}

export interface RunOptions {
  /** The subscriptions are ordered (one POST at a time each, in commit order). */
  ordered?: boolean;
}

export interface DeliveryTarget {
  /**
   * `events` contacts at `perSecond` (Infinity: a burst); each reaches
   * `subscriptions` receiver paths. `organisations` (default 1): the
   * contacts go round that many fresh organisations, each with its own
   * `subscriptions`, as a multi-tenant load would (one subscription takes
   * at most its in-flight cap of POSTs at once).
   */
  run(
    events: number,
    perSecond: number,
    subscriptions: number,
    organisations?: number,
    options?: RunOptions,
  ): Promise<DeliveryRun>;
  /**
   * Another owner: a fresh organisation with one subscription of
   * contact.created to `targetUrl` (not this receiver's: its arrivals are not
   * counted): `create` makes one of its contacts (false: the call failed), `remove` deletes the subscription.
   */
  owner(
    targetUrl: string,
  ): Promise<{ subscriptionId: bigint; create: () => Promise<boolean>; remove: () => Promise<void> }>;
  /** The platform's database (where its stages' timestamps can be read). */
  databaseUrl: string;
  /** The platform's process (its peak memory: memory.ts). */
  pid: number | undefined;
  /**
   * The platform's processes by name: "platform" under `npm start`; with
   * BENCH_LAYOUT=distributed (`npm run start:distributed`: each service and
   * the gateway its own process), each of them.
   */
  processes(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;

/** `nodeArgs` go before the platform's script (e.g. --cpu-prof). */
export async function startDeliveryTarget(nodeArgs: string[] = []): Promise<DeliveryTarget> {
  const suffix = `${Date.now().toString(36)}${randomBytes(3).toString("hex")}`;
  const stream = `BENCH_${suffix}`;
  const databaseName = `bizcard_bench_${suffix}`;
  const db = await createDatabaseOn(ADMIN_DATABASE_URL, databaseName);
  const dataDir = await mkdtemp(path.join(tmpdir(), "bizcard-bench-"));
  const ports = await platformPorts();
  const token = randomBytes(32).toString("base64url");

  // The receiver: contact id → arrival times (one per subscription path).
  const arrivals = new Map<string, number[]>();
  let arrivedCount = 0;
  let onArrival: (() => void) | undefined;
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const at = performance.now();
      res.writeHead(200).end();
      try {
        const id = (JSON.parse(Buffer.concat(chunks).toString("utf8")) as { data: { id: string } }).data.id;
        const list = arrivals.get(id) ?? [];
        list.push(at);
        arrivals.set(id, list);
        arrivedCount++;
        onArrival?.();
      } catch {
        // not one of ours
      }
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  let platform: Spawned | undefined;
  let compiled: string | undefined;
  // CreateContact as the load (contact-caller.ts): the same request a Connect client sends, at less CPU.
  // Its pool connects at the first call.
  const contacts = contactCaller(`http://127.0.0.1:${ports.ORGANISATION_RPC_PORT!}`, token, 10_000);
  const close = async () => {
    await contacts.close();
    await platform?.kill();
    if (compiled) await rm(compiled, { recursive: true, force: true });
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
    await deleteStream(NATS_URL, stream).catch(() => undefined);
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    if (LAYOUT === "compiled") compiled = await compiledBuild();
    platform = spawnProcess(process.execPath, platformArgs(nodeArgs, compiled), {
      // As npm start and start:distributed set it.
      ...PLATFORM_ENV,
      ...ports,
      DATABASE_URL: db.url,
      NATS_URL,
      NATS_STREAM: stream,
      NATS_SUBJECT_PREFIX: `bench${suffix}`,
      INTERNAL_RPC_TOKEN: token,
      DATA_DIR: dataDir,
      // The receiver is on 127.0.0.1 over http.
      WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
      LOG_LEVEL: "warn",
    });
    await httpReady(`http://127.0.0.1:${ports.GATEWAY_PORT}/readyz`, 120_000, platform);
    const rpc = (port: string) => ({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 10_000, internalToken: token });
    const organisations = createRpcClient(OrganisationService, rpc(ports.ORGANISATION_RPC_PORT!));
    const webhooks = createRpcClient(WebhookService, rpc(ports.WEBHOOK_RPC_PORT!));

    /** A fresh organisation (its owner's password hashed: about 0.2 s of CPU) with one subscription of contact.created per target. */
    let organisationCount = 0;
    const subscribedOrganisation = async (name: string, targetUrls: (n: number) => string[], ordered = false) => {
      const n = ++organisationCount;
      const { organisation } = await organisations.createOrganisation({
        name: `${name} ${n}`,
        ownerEmail: `owner${n}@bench.test`,
        ownerPassword: "bench-password",
      });
      const owner = { organisationId: organisation!.id, clientId: "bench" };
      const subscriptionIds: bigint[] = [];
      for (const targetUrl of targetUrls(n)) {
        const { subscription } = await webhooks.createSubscription({
          owner,
          targetUrl,
          eventType: EventType.CONTACT_CREATED,
          ordered,
        });
        subscriptionIds.push(subscription!.id);
      }
      return { n, owner, subscriptionIds };
    };
    const owner = async (targetUrl: string) => {
      const {
        n: id,
        owner: subscriptionOwner,
        subscriptionIds,
      } = await subscribedOrganisation("Bench owner", () => [targetUrl]);
      const { organisationId } = subscriptionOwner;
      let n = 0;
      const create = async () => {
        try {
          await contacts.createContact(organisationId, `Other${++n}`, `o${id}-${n}@bench.test`);
          return true;
        } catch {
          return false;
        }
      };
      const remove = async () =>
        void (await webhooks.deleteSubscription({ owner: subscriptionOwner, id: subscriptionIds[0]! }));
      return { subscriptionId: subscriptionIds[0]!, create, remove };
    };
    // The organisations of a run, each with its subscriptions, by their shape: the passes of one
    // case (delivery-passes.ts) share them, as a tenant's load goes on from one minute to the next.
    // Each organisation's owner password is hashed with scrypt (205-222 ms of CPU on the VM of
    // 2026-11-29 15:13): ten before every pass of the 500 and 1,000 events/s rows, on both growth
    // platforms, were 200 hashes, about 40 s of CPU in a run and the two cores busy before each pass.
    // A shape's subscriptions are its own: no other run's contacts reach them.
    const tenantsByShape = new Map<string, string[]>();
    const tenantsOf = async (count: number, subscriptions: number, ordered: boolean): Promise<string[]> => {
      const shape = `${count}/${subscriptions}/${ordered}`;
      const known = tenantsByShape.get(shape);
      if (known) return known;
      const tenants: string[] = [];
      for (let o = 0; o < count; o++) {
        const paths = (n: number) => Array.from({ length: subscriptions }, (_, s) => `${receiverUrl}/org${n}/s${s}`);
        tenants.push((await subscribedOrganisation("Bench", paths, ordered)).owner.organisationId);
      }
      tenantsByShape.set(shape, tenants);
      return tenants;
    };
    const pid = platform.child.pid;
    const processes = async () => (DISTRIBUTED && pid !== undefined ? childProcesses(pid) : { platform: pid! });
    const run = async (
      events: number,
      perSecond: number,
      subscriptions: number,
      organisationCount = 1,
      options: RunOptions = {},
    ): Promise<DeliveryRun> => {
      const tenants = await tenantsOf(organisationCount, subscriptions, options.ordered ?? false);
      const commits = new Map<string, number>();
      let expected = events * subscriptions;
      const arrivedBefore = arrivedCount;
      let failed = 0;
      let firstError: unknown;
      const create = async (i: number) => {
        try {
          const organisationId = tenants[i % tenants.length]!;
          commits.set(await contacts.createContact(organisationId, `Bench${i}`, `c${i}@bench.test`), performance.now());
        } catch (err) {
          failed++;
          firstError ??= err;
        }
      };
      const cost = await startRunCost(databaseName, Object.values(await processes()));
      const started = performance.now();
      const calls: Promise<void>[] = [];
      if (Number.isFinite(perSecond)) {
        // Open loop: call i starts at started + i / perSecond, answered or not.
        for (let i = 0; i < events; i++) {
          const due = started + (i * 1000) / perSecond;
          const wait = due - performance.now();
          if (wait > 1) await new Promise((r) => setTimeout(r, wait));
          calls.push(create(i));
        }
      } else {
        let next = 0;
        const caller = async () => {
          while (next < events) await create(next++);
        };
        calls.push(...Array.from({ length: 32 }, caller));
      }
      await Promise.all(calls);
      const lastCommit = performance.now();
      if (failed > 0)
        console.warn(`${failed} of ${events} CreateContact calls failed; the first: ${String(firstError)}`);
      // A failed call may still have committed (its answer came too late): those deliveries are not waited for.
      expected = commits.size * subscriptions;
      // Every delivery arrives, or 60 s pass.
      const deadline = lastCommit + 60_000;
      while (arrivedCount - arrivedBefore < expected && performance.now() < deadline) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, 200);
          onArrival = () => {
            if (arrivedCount - arrivedBefore >= expected) {
              clearTimeout(t);
              resolve();
            }
          };
        });
      }
      onArrival = undefined;
      const spent = await cost.stop(commits.size);
      const latencies: number[] = [];
      const samples: DeliveryRun["samples"] = [];
      let firstCommit = Infinity;
      let lastArrival = 0;
      for (const [id, commitAt] of commits) {
        firstCommit = Math.min(firstCommit, commitAt);
        for (const at of arrivals.get(id) ?? []) {
          latencies.push(at - commitAt);
          samples.push({
            contactId: id,
            committedAt: performance.timeOrigin + commitAt,
            arrivedAt: performance.timeOrigin + at,
          });
          lastArrival = Math.max(lastArrival, at);
        }
      }
      latencies.sort((a, b) => a - b);
      return {
        events,
        subscriptions,
        organisations: organisationCount,
        failed,
        arrived: latencies.length,
        eventsPerSecond: events / ((lastCommit - started) / 1000),
        deliveriesPerSecond: latencies.length / ((lastArrival - Math.min(firstCommit, started)) / 1000),
        p50: percentile(latencies, 50),
        p95: percentile(latencies, 95),
        p99: percentile(latencies, 99),
        max: latencies[latencies.length - 1] ?? NaN,
        cost: spent,
        samples,
      };
    };
    return { run, owner, databaseUrl: db.url, pid, processes, close };
  } catch (err) {
    if (platform) process.stderr.write(platform.output());
    await close();
    throw err;
  }
}
