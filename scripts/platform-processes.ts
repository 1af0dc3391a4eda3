// The platform's processes when each runs on its own: what docker-compose.yml
// runs from the image's dist/ (`node dist/<main>.js`) and `npm run
// start:distributed` from the checkout's build (run-compiled.mjs), the same
// compiled entry points.

/**
 * V8 flag of each service's own process and of `npm start`'s (not the
 * gateway's own process): an old generation of at most 1 GB. After each full
 * collection V8 lets the old generation grow to a multiple of what survived
 * before the next one: up to 4 times with its default limit (a share of the
 * machine's memory), less when the limit is smaller (V8's heap-controller.cc,
 * MaxGrowingFactor). With the default, the delivery process let its garbage
 * grow past the per-process memory floor under the bench's highest rate;
 * with 1 GB no process does, and the delivery rows hold (docs/benchmark.md,
 * "The memory rows"). It is a ceiling too, far above any live heap measured
 * under load. In a container with a memory limit Node picks a small limit
 * itself; this one holds wherever the process runs.
 */
export const SERVICE_NODE_FLAGS = ["--max-old-space-size=1024"] as const;

/**
 * V8 flags of the processes that serve the gateway (its own process, and
 * `npm start`'s one process: START_NODE_FLAGS).
 *
 * No allocation-site pretenuring: V8 watches where objects are allocated; a
 * site whose objects survived two young collections while the token endpoint
 * was loaded (PostgreSQL answers, batches waiting for their statement) is
 * switched to allocate straight into the old generation, and stays so when
 * the load changes. Under GET /oauth/me those sites then fill the old
 * generation, and every young collection has to scan their pointers into the
 * young one. A young generation held at 16 MiB (V8's largest by default; V8
 * would shrink it when idle) lets the request's objects die young without
 * holding memory for it.
 *
 * No memory reducer: when a process goes idle, V8's memory reducer runs up to
 * three full collections that shrink the heap, and the process serves
 * requests at a higher CPU cost for the rest of its life; any deployment is
 * idle before its first traffic. It does not lower the peak, which the floors
 * and the container limits are about. Measurements: docs/benchmark.md, "The
 * memory rows".
 */
export const GATEWAY_NODE_FLAGS = [
  "--no-allocation-site-pretenuring",
  "--min-semi-space-size=16",
  "--max-semi-space-size=16",
  "--no-memory-reducer",
] as const;

/**
 * The environment every platform process starts with (`npm start`'s script,
 * start:distributed's children, the image): glibc's malloc returns any block
 * of 1 MiB or more to the system when it is freed. By default it raises that
 * threshold to the largest mmap'd block freed so far (up to 32 MiB), so one
 * password hash (scrypt's 16 MiB, at every CreateOrganisation and each
 * login) stays resident afterwards, in the thread arena that computed it
 * (docs/benchmark.md, "The memory rows"). Other C libraries ignore it.
 */
export const PLATFORM_ENV = { MALLOC_MMAP_THRESHOLD_: "1048576" } as const;

export const PLATFORM_PROCESSES = [
  { name: "auth", main: "services/auth/main", readyPort: "AUTH_RPC_PORT", nodeFlags: SERVICE_NODE_FLAGS },
  {
    name: "organisation",
    main: "services/organisation/main",
    readyPort: "ORGANISATION_RPC_PORT",
    nodeFlags: SERVICE_NODE_FLAGS,
  },
  { name: "webhook", main: "services/webhook/main", readyPort: "WEBHOOK_RPC_PORT", nodeFlags: SERVICE_NODE_FLAGS },
  { name: "delivery", main: "services/delivery/main", readyPort: "DELIVERY_RPC_PORT", nodeFlags: SERVICE_NODE_FLAGS },
  { name: "gateway", main: "gateway/main", readyPort: "GATEWAY_PORT", nodeFlags: GATEWAY_NODE_FLAGS },
] as const;

export type PlatformProcess = (typeof PLATFORM_PROCESSES)[number];

/** The command docker-compose.yml runs for a process (the image holds the compiled dist/). */
export const composeCommand = (p: PlatformProcess): string[] => compiledCommand(p, "dist");

/** The compiled entry point under `outDir` (npm run build's dist/, or another --outDir inside the project). */
export const compiledCommand = (p: PlatformProcess, outDir: string): string[] => [
  "node",
  ...p.nodeFlags,
  `${outDir.replace(/\/+$/, "")}/${p.main}.js`,
];

/**
 * V8 flags of `npm start`'s one process, which serves the gateway and runs
 * every service: the gateway's (no pretenuring, a 16 MiB young generation)
 * and the services' old-generation limit (docs/benchmark.md, "The memory rows").
 */
export const START_NODE_FLAGS = [...GATEWAY_NODE_FLAGS, ...SERVICE_NODE_FLAGS] as const;

/** What `npm start` runs (package.json's start script, `exec`: `env` execs node in turn): every service and the gateway in one process. */
export const startCommand = (): string[] => [
  "env",
  ...Object.entries(PLATFORM_ENV).map(([k, v]) => `${k}=${v}`),
  "node",
  ...startArgs(),
];

/**
 * Its arguments after `node`, with `nodeArgs` (--cpu-prof...) among the
 * flags: for the bench, which spawns it as npm start does (with
 * PLATFORM_ENV). scripts/run-compiled.mjs compiles the sources (when they
 * changed) and runs the compiled scripts/start.ts in the same process.
 */
export const startArgs = (nodeArgs: readonly string[] = []): string[] => [
  ...START_NODE_FLAGS,
  ...nodeArgs,
  "scripts/run-compiled.mjs",
  "scripts/start.ts",
];
