// `npm run start:distributed`: the platform as docker-compose.yml runs it, each service and the gateway
// a process of its own, without Docker, on the real backends (DATABASE_URL and NATS_URL: separate
// processes cannot share PGlite or an in-process bus). The children run their main.js from this build,
// as the containers run them from dist/; `--compiled <folder>` runs another build folder of the project.
// Each child's lines are prefixed with its name; SIGINT or SIGTERM stops them all, as does a child's death.
import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { exitOnConfigError, loadConfigOrExit, requireBackends, type Config } from "../services/shared/config.js";
import { makePrivateFolder } from "./private-folder.js";
import { INTERNAL_TOKEN_FILE, internalToken } from "./internal-token.js";
import { WEBHOOK_SECRET_KEY_FILE, webhookSecretKey } from "./webhook-secret-key.js";
import { PLATFORM_ENV, PLATFORM_PROCESSES, compiledCommand, type PlatformProcess } from "./platform-processes.js";

const STOP_TIMEOUT_MS = 30_000;
const READY_TIMEOUT_MS = 180_000;
const width = Math.max(...PLATFORM_PROCESSES.map((p) => p.name.length));

const say = (line: string) => process.stdout.write(`${"start".padEnd(width)} | ${line}\n`);

// The services' own requirements, but for the credential and the webhook secrets' key: as npm start,
// one of each per data folder, made when unset.
const config = loadConfigOrExit([(c) => requireBackends(c, { database: true, nats: true })]);
const env: NodeJS.ProcessEnv = { ...process.env, ...PLATFORM_ENV };
const dataDir = path.resolve(config.DATA_DIR);
for (const [variable, file, made] of [
  ["INTERNAL_RPC_TOKEN", INTERNAL_TOKEN_FILE, internalToken],
  ["WEBHOOK_SECRET_ENCRYPTION_KEY", WEBHOOK_SECRET_KEY_FILE, webhookSecretKey],
] as const) {
  if (config[variable].length > 0) continue;
  await makePrivateFolder(dataDir);
  env[variable] = await made(dataDir).catch(exitOnConfigError);
  say(`${variable} is unset: using the one in ${path.join(dataDir, file)}`);
}

// The build the children run: `--compiled <folder>`, else this one's own folder, above its scripts/.
const compiledAt = process.argv.indexOf("--compiled");
const compiled =
  compiledAt < 0 ? path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..") : process.argv[compiledAt + 1];
if (!compiled) {
  say("--compiled needs the compiled folder: npm run build && npm run start:distributed -- --compiled dist");
  process.exit(2);
}

const children: ReturnType<typeof start>[] = [];
let stopping = false;

function prefixLines(name: string, stream: NodeJS.ReadableStream, out: NodeJS.WriteStream): void {
  createInterface({ input: stream, crlfDelay: Infinity }).on("line", (line) =>
    out.write(`${name.padEnd(width)} | ${line}\n`),
  );
}

function start(proc: PlatformProcess) {
  const [node, ...args] = compiledCommand(proc, compiled!);
  say(`starting ${proc.name}: ${node} ${args.join(" ")}`);
  // Its own process group: a Ctrl-C reaches this process only, which stops the children in order.
  const child = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  say(`${proc.name} is pid ${child.pid}`);
  prefixLines(proc.name, child.stdout!, process.stdout);
  prefixLines(proc.name, child.stderr!, process.stderr);
  const exited = new Promise<void>((resolve) => {
    child.once("exit", (code, signal) => {
      if (!stopping) {
        say(`${proc.name} exited (${signal ?? `code ${code}`}): stopping the others`);
        void stopAll(1);
      }
      resolve();
    });
  });
  return { proc, child, exited };
}

async function stopAll(exitCode: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  say("stopping every process");
  const stopOne = async ({ proc, child, exited }: (typeof children)[number]) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => {
      say(`${proc.name} did not stop within ${STOP_TIMEOUT_MS} ms: killing it`);
      child.kill("SIGKILL");
    }, STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };
  // The gateway first, so that no request reaches a service that is draining.
  await Promise.all(children.filter((c) => c.proc.name === "gateway").map(stopOne));
  await Promise.all(children.filter((c) => c.proc.name !== "gateway").map(stopOne));
  say("bizcard platform stopped");
  process.exit(exitCode);
}

process.on("SIGINT", () => void stopAll(0));
process.on("SIGTERM", () => void stopAll(0));

/** Where this process can reach a child's /readyz (a wildcard listening address answers on loopback). */
function readyUrl(proc: PlatformProcess, c: Config): string {
  const host = proc.name === "gateway" ? c.GATEWAY_HOST : c.RPC_HOST;
  const reachable = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  return `http://${reachable}:${c[proc.readyPort]}/readyz`;
}

async function waitReady(proc: PlatformProcess): Promise<void> {
  const url = readyUrl(proc, config);
  const end = Date.now() + READY_TIMEOUT_MS;
  while (!stopping) {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) }).catch(() => undefined);
    if (res?.ok) return;
    if (Date.now() > end) throw new Error(`${proc.name} was not ready at ${url} within ${READY_TIMEOUT_MS} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

say(
  `PostgreSQL at ${new URL(config.DATABASE_URL!).host}, NATS at ${config.NATS_URL}; each service migrates its own schema as it starts`,
);
for (const proc of PLATFORM_PROCESSES) children.push(start(proc));
try {
  await Promise.all(
    PLATFORM_PROCESSES.map(async (proc) => {
      await waitReady(proc);
      if (!stopping) say(`${proc.name} ready`);
    }),
  );
} catch (err) {
  say((err as Error).message);
  await stopAll(1);
}
if (!stopping) {
  process.stdout.write(
    `\nbizcard platform ready (${PLATFORM_PROCESSES.length} processes, PostgreSQL, NATS JetStream)\n  gateway: http://${config.GATEWAY_HOST}:${config.GATEWAY_PORT}\n  issuer (PUBLIC_URL): ${config.publicUrl}\n\n`,
  );
}
