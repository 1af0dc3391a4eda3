// The bizcard command's lines: every command's flags and usage, and the
// parse of a command line against them. Nothing here loads a client, so that
// `bizcard --help` and a usage error answer at once (bizcard-cli.ts).
import { parseArgs, type ParseArgsConfig } from "node:util";
import type { ContactFields } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import type { ServiceName } from "./cli-connection.js";
import { didYouMean } from "./nearest.js";

export const CONTACT_FLAGS = {
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
type ContactFlag = keyof typeof CONTACT_FLAGS;
const CONTACT_FLAG_NAMES = Object.keys(CONTACT_FLAGS) as ContactFlag[];

const str = { type: "string" } as const;
const contactOptions = Object.fromEntries(CONTACT_FLAG_NAMES.map((k) => [k, str]));

interface CommandSpec {
  /** The usage lines of the command: flags outside [brackets] are required. */
  usage: string[];
  options: NonNullable<ParseArgsConfig["options"]>;
  /** Each of these flags must be given. */
  required: string[];
  /** At least one flag of each group must be given. */
  oneOf: { flags: string[]; missing: string }[];
  /** Arguments after the command, each required, in this order (usage names). */
  positionals?: string[];
}

export const COMMANDS: Record<string, CommandSpec> = {
  "org create": {
    usage: ["bizcard org create --name NAME --email EMAIL --password PASSWORD [--json]"],
    options: { name: str, email: str, password: str },
    required: ["name", "email", "password"],
    oneOf: [],
  },
  "client create": {
    usage: [
      `bizcard client create --name NAME --redirect-uri URI [--redirect-uri URI…] [--public] [--scope "A B"] [--grant-type G…] [--json]`,
      `bizcard client create --name NAME --owner-org ID [--redirect-uri URI…] [--scope "A B"] [--grant-type G…] [--json]`,
    ],
    options: {
      name: str,
      "redirect-uri": { type: "string", multiple: true },
      public: { type: "boolean" },
      "owner-org": str,
      scope: str,
      "grant-type": { type: "string", multiple: true },
    },
    required: ["name"],
    oneOf: [
      {
        flags: ["redirect-uri", "owner-org"],
        missing: "missing --redirect-uri (or --owner-org for a client an organisation owns)",
      },
    ],
  },
  "client list": {
    usage: ["bizcard client list [--self-registered] [--json]"],
    options: { "self-registered": { type: "boolean" } },
    required: [],
    oneOf: [],
  },
  "client delete": {
    usage: ["bizcard client delete CLIENT_ID [--json]"],
    options: {},
    required: [],
    oneOf: [],
    positionals: ["CLIENT_ID"],
  },
  "contact create": {
    usage: ["bizcard contact create --org ID (--first-name F | --last-name L) [FIELD…] [--json]"],
    options: { org: str, ...contactOptions },
    required: ["org"],
    oneOf: [{ flags: ["first-name", "last-name"], missing: "missing --first-name or --last-name" }],
  },
  "contact update": {
    usage: ["bizcard contact update --org ID --id ID FIELD [FIELD…] [--json]"],
    options: { org: str, id: str, ...contactOptions },
    required: ["org", "id"],
    oneOf: [{ flags: CONTACT_FLAG_NAMES, missing: "missing a FIELD to change" }],
  },
  "subscriptions rotate-secret": {
    usage: ["bizcard subscriptions rotate-secret ID --org ID --client CLIENT_ID [--json]"],
    options: { org: str, client: str },
    required: ["org", "client"],
    oneOf: [],
    positionals: ["ID"],
  },
  "secrets reencrypt": {
    usage: ["bizcard secrets reencrypt [--json]"],
    options: {},
    required: [],
    oneOf: [],
  },
  "deliveries failed": {
    usage: ["bizcard deliveries failed [--org ID] [--limit N] [--json]"],
    options: { org: str, limit: str },
    required: [],
    oneOf: [],
  },
  "deliveries log": {
    usage: ["bizcard deliveries log --org ID --client CLIENT_ID --subscription ID [--limit N] [--json]"],
    options: { org: str, client: str, subscription: str, limit: str },
    required: ["org", "client", "subscription"],
    oneOf: [],
  },
  "deliveries retry": {
    usage: ["bizcard deliveries retry --org ID --client CLIENT_ID --subscription ID --id DELIVERY_ID [--json]"],
    options: { org: str, client: str, subscription: str, id: str },
    required: ["org", "client", "subscription", "id"],
    oneOf: [],
  },
  "deliveries recover": {
    usage: ["bizcard deliveries recover SUBSCRIPTION_ID --org ID --client CLIENT_ID --since TIME [--json]"],
    options: { org: str, client: str, since: str },
    required: ["org", "client", "since"],
    oneOf: [],
    positionals: ["SUBSCRIPTION_ID"],
  },
};

export const USAGE = `usage:
${Object.values(COMMANDS)
  .flatMap((c) => c.usage)
  .map((l) => `  ${l}`)
  .join("\n")}
  bizcard --help

Flags outside [brackets] are required; (A | B) needs at least one of them.
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

/** The usage lines of one group ("org", "client", "contact"), or undefined for an unknown one. */
function groupUsage(group: string): string | undefined {
  const lines = Object.entries(COMMANDS)
    .filter(([name]) => name.split(" ")[0] === group)
    .flatMap(([, c]) => c.usage);
  return lines.length
    ? `usage:\n${lines.map((l) => `  ${l}`).join("\n")}\n(bizcard --help for every command)`
    : undefined;
}

/** The service a command calls. */
export function serviceOf(argv: string[]): ServiceName {
  return argv[0] === "client"
    ? "auth"
    : argv[0] === "deliveries"
      ? "delivery"
      : argv[0] === "subscriptions" || argv[0] === "secrets"
        ? "webhook"
        : "organisation";
}

export function contactFields(values: Record<string, unknown>): Partial<ContactFields> {
  const fields: Record<string, string> = {};
  for (const [flag, field] of Object.entries(CONTACT_FLAGS)) {
    if (typeof values[flag] === "string") fields[field] = values[flag] as string;
  }
  return fields;
}

/** The command and its flag values, checked against its spec; a UsageError otherwise. */
export function parse(argv: string[]): { command: string; values: Record<string, unknown>; positionals: string[] } {
  const [group = "", action] = argv;
  if (!group) throw new UsageError("no command");
  const command = `${group} ${action ?? ""}`.trim();
  const spec = COMMANDS[command];
  if (!spec) {
    const usage = groupUsage(group);
    const groups = [...new Set(Object.keys(COMMANDS).map((c) => c.split(" ")[0]!))];
    if (!usage) throw new UsageError(`unknown command: ${group}${didYouMean(group, groups)}`);
    const actions = Object.keys(COMMANDS)
      .filter((c) => c.startsWith(`${group} `))
      .map((c) => c.split(" ")[1]!);
    throw new UsageError(
      action && !action.startsWith("-")
        ? `unknown command: ${command}${didYouMean(action, actions, `${group} `) || ` (${group}: ${actions.join(", ")})`}`
        : `${group}: which command? (${actions.join(", ")})`,
      usage,
    );
  }
  const usage = `usage:\n${spec.usage.map((l) => `  ${l}`).join("\n")}\n(bizcard --help for every command)`;
  let values: Record<string, unknown>;
  let positionals: string[];
  const names = spec.positionals ?? [];
  try {
    ({ values, positionals } = parseArgs({
      args: argv.slice(2),
      options: { ...spec.options, json: { type: "boolean" } },
      strict: true,
      allowPositionals: names.length > 0,
    }));
  } catch (err) {
    throw new UsageError(flagError(err as Error & { code?: string }, Object.keys(spec.options)), usage);
  }
  if (positionals.length < names.length)
    throw new UsageError(`missing ${names.slice(positionals.length).join(", ")}`, usage);
  if (positionals.length > names.length)
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals[names.length])}`, usage);
  const missing = spec.required.filter((k) => values[k] === undefined);
  if (missing.length) throw new UsageError(`missing --${missing.join(", --")}`, usage);
  for (const group of spec.oneOf) {
    if (!group.flags.some((k) => values[k] !== undefined)) throw new UsageError(group.missing, usage);
  }
  for (const [flag, what] of Object.entries(ID_FLAGS)) {
    const value = values[flag];
    if (typeof value === "string" && !UUID.test(value)) {
      throw new UsageError(`--${flag}: expected ${what} (a UUID), got ${JSON.stringify(value)}`, usage);
    }
  }
  return { command, values, positionals };
}

/** Flags that carry an id of the platform's, a UUID: refused by name before any call. */
const ID_FLAGS: Record<string, string> = {
  org: "an organisation id",
  "owner-org": "an organisation id",
};
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** parseArgs's error in the flag's own terms, with the nearest flag for one it does not know. */
function flagError(err: Error & { code?: string }, flags: string[]): string {
  const unknown = /^Unknown option '(-{1,2}[^']*)'/.exec(err.message)?.[1];
  if (err.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && unknown) {
    return `unknown flag ${unknown}${didYouMean(unknown.replace(/^-+/, ""), [...flags, "json"], "--")}`;
  }
  return err.message;
}

export function wholeNumber(flag: string, value: string, min: number, max: number): number {
  const n = /^\d{1,16}$/.test(value) ? Number(value) : NaN;
  if (!(n >= min && n <= max)) throw new UsageError(`--${flag}: expected a whole number from ${min} to ${max}`);
  return n;
}
