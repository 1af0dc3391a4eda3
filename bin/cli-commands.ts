// The bizcard command's lines, and the parse of a command line against them.
// A command's usage lines are its spec: `--flag VALUE` takes a value (`VALUE…`
// repeats), a bare `--flag` is a switch, flags outside [brackets] are required,
// and CAPITALS after the command are its arguments. Nothing here loads a client,
// so that `bizcard --help` and a usage error answer at once (bizcard-cli.ts).
import { parseArgs, type ParseArgsConfig } from "node:util";
import type { ContactFields } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import type { ServiceClients, ServiceName } from "./cli-connection.js";
import { didYouMean } from "./nearest.js";

export type Output = { json: unknown; text: string };
/** One command's calls and what it prints, given its flag values and arguments. */
export type CommandRun = (c: ServiceClients, values: Record<string, unknown>, positionals: string[]) => Promise<Output>;

const CONTACT_FLAGS = {
  "first-name": "firstName",
  "last-name": "lastName",
  email: "email",
  phone: "phone",
  company: "company",
  "job-title": "jobTitle",
  website: "website",
  address: "address",
  notes: "notes",
} as const;

interface CommandSpec {
  usage: string[];
  /** At least one of these flags must be given. */
  oneOf?: { flags: string[]; missing: string };
}

const COMMANDS: Record<string, CommandSpec> = {
  "org create": { usage: ["bizcard org create --name NAME --email EMAIL --password PASSWORD [--json]"] },
  "org list": { usage: ["bizcard org list [--json]"] },
  "client create": {
    usage: [
      `bizcard client create --name NAME --redirect-uri URI [--redirect-uri URI…] [--public] [--scope "A B"] [--grant-type G…] [--json]`,
      `bizcard client create --name NAME --owner-org ID [--redirect-uri URI…] [--scope "A B"] [--grant-type G…] [--json]`,
    ],
    oneOf: {
      flags: ["redirect-uri", "owner-org"],
      missing: "missing --redirect-uri (or --owner-org for a client an organisation owns)",
    },
  },
  "client list": { usage: ["bizcard client list [--self-registered] [--json]"] },
  "client delete": { usage: ["bizcard client delete CLIENT_ID [--json]"] },
  "contact create": {
    usage: ["bizcard contact create --org ID (--first-name F | --last-name L) [FIELD…] [--json]"],
    oneOf: { flags: ["first-name", "last-name"], missing: "missing --first-name or --last-name" },
  },
  "contact update": {
    usage: ["bizcard contact update --org ID --id ID FIELD [FIELD…] [--json]"],
    oneOf: { flags: Object.keys(CONTACT_FLAGS), missing: "missing a FIELD to change" },
  },
  "subscriptions rotate-secret": {
    usage: ["bizcard subscriptions rotate-secret ID --org ID --client CLIENT_ID [--json]"],
  },
  "secrets reencrypt": { usage: ["bizcard secrets reencrypt [--json]"] },
  "deliveries failed": { usage: ["bizcard deliveries failed [--org ID] [--limit N] [--json]"] },
  "deliveries log": {
    usage: ["bizcard deliveries log --org ID --client CLIENT_ID --subscription ID [--limit N] [--json]"],
  },
  "deliveries retry": {
    usage: ["bizcard deliveries retry --org ID --client CLIENT_ID --subscription ID --id DELIVERY_ID [--json]"],
  },
  "deliveries recover": {
    usage: ["bizcard deliveries recover SUBSCRIPTION_ID --org ID --client CLIENT_ID --since TIME [--json]"],
  },
};

const indented = (lines: string[]) => lines.map((l) => `  ${l}`).join("\n");
const usageOf = (lines: string[]) => `usage:\n${indented(lines)}\n(bizcard --help for every command)`;

export const USAGE = `usage:
${indented(Object.values(COMMANDS).flatMap((c) => c.usage))}
  bizcard --help

Flags outside [brackets] are required; (A | B) needs at least one of them.
org list: every organisation (id, creation time, name), newest first.
FIELD: --first-name F  --last-name L  --email E  --phone P  --company C  --job-title T
       --website URL  --address A  --notes N     (an empty value clears the field)
--json: print one JSON object and nothing else; an error is {"error", "error_description"}.
exit status: 0 done, 1 the service refused or could not be reached, 2 bad command or flag.

environment: ORGANISATION_RPC_URL, AUTH_RPC_URL, WEBHOOK_RPC_URL, DELIVERY_RPC_URL (default http://127.0.0.1 on the
  port the platform listens on: ORGANISATION_RPC_PORT, AUTH_RPC_PORT, WEBHOOK_RPC_PORT, DELIVERY_RPC_PORT, else 7102, 7101, 7103, 7104),
  INTERNAL_RPC_TOKEN (default: read from DATA_DIR/internal-rpc-token, as npm start writes it)`;

/** A bad command line; `usage` is the part of the usage that applies. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly usage = USAGE,
  ) {
    super(message);
  }
}

const SERVICES = new Map<string, ServiceName>([
  ["client", "auth"],
  ["deliveries", "delivery"],
  ["subscriptions", "webhook"],
  ["secrets", "webhook"],
]);

/** The service a command calls. */
export const serviceOf = (argv: string[]): ServiceName => SERVICES.get(argv[0] ?? "") ?? "organisation";

export function contactFields(values: Record<string, unknown>): Partial<ContactFields> {
  const fields: Record<string, string> = {};
  for (const [flag, field] of Object.entries(CONTACT_FLAGS)) {
    if (typeof values[flag] === "string") fields[field] = values[flag] as string;
  }
  return fields;
}

/** A command's flags, the flags every usage line requires, and its arguments, read from its usage lines. */
function flagsOf(usage: string[]) {
  const options: NonNullable<ParseArgsConfig["options"]> = {};
  for (const [, flag, value] of usage.join(" ").matchAll(/--([a-z-]+)( "[^"]*"| [A-Z_]+…?)?/g)) {
    if (flag === "json") continue;
    const multiple = Boolean(options[flag!]?.multiple) || Boolean(value?.endsWith("…"));
    options[flag!] = value ? { type: "string", multiple } : { type: "boolean" };
  }
  if (usage[0]!.includes("FIELD")) {
    for (const flag of Object.keys(CONTACT_FLAGS)) options[flag] ??= { type: "string" };
  }
  const required = usage
    .map((line) => [...line.replace(/\[[^\]]*\]|\([^)]*\)/g, "").matchAll(/--([a-z-]+)/g)].map((m) => m[1]!))
    .reduce((all, line) => all.filter((flag) => line.includes(flag)));
  const positionals: string[] = [];
  for (const word of usage[0]!.split(" ").slice(3)) {
    if (!/^[A-Z_]+$/.test(word)) break;
    positionals.push(word);
  }
  return { options, required, positionals };
}

/** The command and its flag values, checked against its spec; a UsageError otherwise. */
export function parse(argv: string[]): { command: string; values: Record<string, unknown>; positionals: string[] } {
  const [group = "", action] = argv;
  if (!group) throw new UsageError("no command");
  const command = `${group} ${action ?? ""}`.trim();
  const spec = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (!spec) {
    const groups = [...new Set(Object.keys(COMMANDS).map((c) => c.split(" ")[0]!))];
    const actions = Object.keys(COMMANDS)
      .filter((c) => c.startsWith(`${group} `))
      .map((c) => c.split(" ")[1]!);
    if (!actions.length) throw new UsageError(`unknown command: ${group}${didYouMean(group, groups)}`);
    throw new UsageError(
      action && !action.startsWith("-")
        ? `unknown command: ${command}${didYouMean(action, actions, `${group} `) || ` (${group}: ${actions.join(", ")})`}`
        : `${group}: which command? (${actions.join(", ")})`,
      usageOf(actions.flatMap((a) => COMMANDS[`${group} ${a}`]!.usage)),
    );
  }
  const usage = usageOf(spec.usage);
  const { options, required, positionals: names } = flagsOf(spec.usage);
  let values: Record<string, unknown>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv.slice(2),
      options: { ...options, json: { type: "boolean" } },
      strict: true,
      allowPositionals: names.length > 0,
    }));
  } catch (err) {
    throw new UsageError(flagError(err as Error & { code?: string }, Object.keys(options)), usage);
  }
  if (positionals.length < names.length)
    throw new UsageError(`missing ${names.slice(positionals.length).join(", ")}`, usage);
  if (positionals.length > names.length)
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals[names.length])}`, usage);
  const missing = required.filter((k) => values[k] === undefined);
  if (missing.length) throw new UsageError(`missing --${missing.join(", --")}`, usage);
  if (spec.oneOf && !spec.oneOf.flags.some((k) => values[k] !== undefined))
    throw new UsageError(spec.oneOf.missing, usage);
  for (const flag of ["org", "owner-org"]) {
    const value = values[flag];
    if (typeof value === "string" && !UUID.test(value)) {
      throw new UsageError(`--${flag}: expected an organisation id (a UUID), got ${JSON.stringify(value)}`, usage);
    }
  }
  return { command, values, positionals };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** parseArgs's error in the flag's own terms, with the nearest flag for one it does not know. */
function flagError(err: Error & { code?: string }, flags: string[]): string {
  const unknown = /^Unknown option '(-{1,2}[^']*)'/.exec(err.message)?.[1];
  if (err.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && unknown) {
    return `unknown flag ${unknown}${didYouMean(unknown.replace(/^-+/, ""), [...flags, "json"], "--")}`;
  }
  return err.message;
}

/** Rows under a heading, each column but the last padded to its width; `none` when there are no rows. */
export function table(heading: string[], widths: number[], rows: string[][], none: string): string {
  const line = (cells: string[]) => cells.map((c, i) => (i < widths.length ? c.padEnd(widths[i]!) : c)).join("  ");
  return rows.length ? [heading, ...rows].map(line).join("\n") : none;
}

export function wholeNumber(flag: string, value: string, min: number, max: number): number {
  const n = /^\d{1,16}$/.test(value) ? Number(value) : NaN;
  if (!(n >= min && n <= max)) throw new UsageError(`--${flag}: expected a whole number from ${min} to ${max}`);
  return n;
}

/** A subscription id given as `name`: a positive whole number. */
export function subscriptionId(name: string, value: string): bigint {
  if (!/^[1-9]\d{0,15}$/.test(value))
    throw new UsageError(
      `${name}: expected a subscription id (a positive whole number), not ${JSON.stringify(value.slice(0, 40))}`,
    );
  return BigInt(value);
}
