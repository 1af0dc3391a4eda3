// The platform's processes when each runs on its own: docker-compose.yml runs them from the image's
// dist/ (`node dist/<main>.js`), `npm run start:distributed` from the checkout's build
// (run-compiled.mjs): the same compiled entry points.

/**
 * V8 flag of each service's process and of `npm start`'s: an old generation of at most 1 GB. V8 lets
 * the old generation grow to a multiple of what survived the last full collection, a larger multiple
 * under a larger limit (heap-controller.cc, MaxGrowingFactor); under the default limit a busy delivery
 * process let its garbage grow past its memory budget (docs/benchmark.md, "The memory rows").
 */
export const SERVICE_NODE_FLAGS = ["--max-old-space-size=1024"] as const;

/**
 * V8 flags of the processes that serve the gateway (its own, and `npm start`'s). No allocation-site
 * pretenuring: sites whose objects outlived two young collections under one load would allocate into
 * the old generation for good, and under another load fill it. A young generation held at 16 MiB lets
 * each request's objects die young. No memory reducer: its collections on going idle shrink the heap at
 * a higher CPU cost, without lowering the peak (docs/benchmark.md, "The memory rows").
 */
export const GATEWAY_NODE_FLAGS = [
  "--no-allocation-site-pretenuring",
  "--min-semi-space-size=16",
  "--max-semi-space-size=16",
  "--no-memory-reducer",
] as const;

/**
 * The environment of every platform process: glibc's malloc returns any freed block of 1 MiB or more
 * to the system. By default it raises that threshold to the largest block freed so far, so a password
 * hash's 16 MiB of scrypt memory would stay resident. Other C libraries ignore it.
 */
export const PLATFORM_ENV = { MALLOC_MMAP_THRESHOLD_: "1048576" } as const;

export const PLATFORM_PROCESSES = [
  { name: "auth", readyPort: "AUTH_RPC_PORT", nodeFlags: SERVICE_NODE_FLAGS },
  { name: "organisation", readyPort: "ORGANISATION_RPC_PORT", nodeFlags: SERVICE_NODE_FLAGS },
  { name: "webhook", readyPort: "WEBHOOK_RPC_PORT", nodeFlags: SERVICE_NODE_FLAGS },
  { name: "delivery", readyPort: "DELIVERY_RPC_PORT", nodeFlags: SERVICE_NODE_FLAGS },
  { name: "gateway", readyPort: "GATEWAY_PORT", nodeFlags: GATEWAY_NODE_FLAGS },
] as const;

export type PlatformProcess = (typeof PLATFORM_PROCESSES)[number];

/** The command docker-compose.yml runs for a process (the image holds the compiled dist/). */
export const composeCommand = (p: PlatformProcess): string[] => compiledCommand(p, "dist");

/** The compiled entry point under `outDir` (npm run build's dist/, or another --outDir inside the project). */
export const compiledCommand = (p: PlatformProcess, outDir: string): string[] => {
  const main = p.name === "gateway" ? "gateway/main" : `services/${p.name}/main`;
  return ["node", ...p.nodeFlags, `${outDir.replace(/\/+$/, "")}/${main}.js`];
};

/**
 * What `npm start` runs (package.json's start script, `exec`: `env` execs
 * node in turn): every service and the gateway in one process.
 */
export const startCommand = (): string[] => [
  "env",
  ...Object.entries(PLATFORM_ENV).map(([k, v]) => `${k}=${v}`),
  "node",
  ...startArgs(),
];

/**
 * Its arguments after `node`, with `nodeArgs` (--cpu-prof…) among the V8 flags (the gateway's and the
 * services'): for the bench, which spawns it as npm start does. run-compiled.mjs compiles the sources
 * when they changed and runs the compiled start.ts.
 */
export const startArgs = (nodeArgs: readonly string[] = []): string[] => [
  ...GATEWAY_NODE_FLAGS,
  ...SERVICE_NODE_FLAGS,
  ...nodeArgs,
  "scripts/run-compiled.mjs",
  "scripts/start.ts",
];
