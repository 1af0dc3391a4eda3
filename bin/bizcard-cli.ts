// bizcard: administration over RPC.
//   bizcard org create --name NAME --email EMAIL --password PASSWORD [--json]
//   bizcard client create --name NAME --redirect-uri URI [--redirect-uri URI…] [--public] [--scope "A B"] [--grant-type G…] [--json]
//   bizcard client create --name NAME --owner-org ID [--redirect-uri URI…] [--scope "A B"] [--grant-type G…] [--json]
//   bizcard client list [--self-registered] [--json]
//   bizcard client delete CLIENT_ID [--json]
//   bizcard contact create --org ID (--first-name F | --last-name L) [FIELD…] [--json]
//   bizcard contact update --org ID --id ID FIELD [FIELD…] [--json]
//   bizcard subscriptions rotate-secret ID --org ID --client CLIENT_ID [--json]
//   bizcard secrets reencrypt [--json]
//   bizcard deliveries failed [--org ID] [--limit N] [--json]
//   bizcard deliveries log --org ID --client CLIENT_ID --subscription ID [--limit N] [--json]
//   bizcard deliveries retry --org ID --client CLIENT_ID --subscription ID --id DELIVERY_ID [--json]
//   bizcard deliveries recover SUBSCRIPTION_ID --org ID --client CLIENT_ID --since TIME [--json]
//   bizcard --help
// Flags outside [brackets] are required. The organisation is always named
// explicitly (--org): the organisation service refuses contact calls without it.
// --help prints the usage on stdout and exits 0. A bad command or flag prints
// the usage on stderr and exits 2; an RPC failure prints one line on stderr and
// exits 1. With --json, the output is one JSON object and nothing else, errors
// included: {"error", "error_description"} on stdout, with the same exit status.
import { parseArgs, type ParseArgsConfig } from "node:util";
import { Code, ConnectError } from "@connectrpc/connect";
import { AuthService } from "../gen/bizcard/auth/v1/auth_pb.js";
import { DeliveryService } from "../gen/bizcard/delivery/v1/delivery_pb.js";
import { OrganisationService, type ContactFields } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService } from "../gen/bizcard/webhook/v1/webhook_pb.js";
import { contactJson } from "../services/shared/contact-json.js";
import { deliveryJson, ownedDeliveryJson } from "../services/shared/delivery-json.js";
import { createRpcClient } from "../services/shared/rpc/client.js";
import { createClient, deleteClient, listClients } from "./client-commands.js";
import { deliveriesLog } from "./deliveries-log.js";
import { RECOVER_COMMAND, recoverDeliveries, recoverUsageProblem } from "./deliveries-recover.js";
import { SUBSCRIPTION_COMMANDS, rotateSecret } from "./subscription-commands.js";
import { SECRET_COMMANDS, reencryptSecrets } from "./secret-commands.js";
import { explainFailure, internalCredential, serviceUrl, type ServiceName } from "./cli-connection.js";

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

const COMMANDS: Record<string, CommandSpec> = {
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
    oneOf: [{ flags: ["redirect-uri", "owner-org"], missing: "missing --redirect-uri (or --owner-org for a client an organisation owns)" }],
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
  ...SUBSCRIPTION_COMMANDS,
  ...SECRET_COMMANDS,
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
  ...RECOVER_COMMAND,
};

const USAGE = `usage:
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
class UsageError extends Error {
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
  return lines.length ? `usage:\n${lines.map((l) => `  ${l}`).join("\n")}\n(bizcard --help for every command)` : undefined;
}

function clients() {
  const credential = internalCredential();
  const options = (name: ServiceName) => ({ baseUrl: serviceUrl(name), timeoutMs: 15_000, internalToken: credential.token });
  return {
    organisations: createRpcClient(OrganisationService, options("organisation")),
    auth: createRpcClient(AuthService, options("auth")),
    webhook: createRpcClient(WebhookService, options("webhook")),
    deliveries: createRpcClient(DeliveryService, options("delivery")),
  };
}

/** The service a command calls. */
function serviceOf(argv: string[]): ServiceName {
  return argv[0] === "client" ? "auth" : argv[0] === "deliveries" ? "delivery" : argv[0] === "subscriptions" || argv[0] === "secrets" ? "webhook" : "organisation";
}

function contactFields(values: Record<string, unknown>): Partial<ContactFields> {
  const fields: Record<string, string> = {};
  for (const [flag, field] of Object.entries(CONTACT_FLAGS)) {
    if (typeof values[flag] === "string") fields[field] = values[flag] as string;
  }
  return fields;
}

/** The command and its flag values, checked against its spec; a UsageError otherwise. */
function parse(argv: string[]): { command: string; values: Record<string, unknown>; positionals: string[] } {
  const [group = "", action] = argv;
  if (!group) throw new UsageError("no command");
  const command = `${group} ${action ?? ""}`.trim();
  const spec = COMMANDS[command];
  if (!spec) {
    const usage = groupUsage(group);
    if (!usage) throw new UsageError(`unknown command: ${group}`);
    const actions = Object.keys(COMMANDS).filter((c) => c.startsWith(`${group} `));
    const which = actions.map((c) => c.split(" ")[1]).join(", ");
    throw new UsageError(action && !action.startsWith("-") ? `unknown command: ${command} (${group}: ${which})` : `${group}: which command? (${which})`, usage);
  }
  const usage = `usage:\n${spec.usage.map((l) => `  ${l}`).join("\n")}\n(bizcard --help for every command)`;
  let values: Record<string, unknown>;
  let positionals: string[];
  const names = spec.positionals ?? [];
  try {
    ({ values, positionals } = parseArgs({ args: argv.slice(2), options: { ...spec.options, json: { type: "boolean" } }, strict: true, allowPositionals: names.length > 0 }));
  } catch (err) {
    throw new UsageError((err as Error).message, usage);
  }
  if (positionals.length < names.length) throw new UsageError(`missing ${names.slice(positionals.length).join(", ")}`, usage);
  if (positionals.length > names.length) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[names.length])}`, usage);
  const missing = spec.required.filter((k) => values[k] === undefined);
  if (missing.length) throw new UsageError(`missing --${missing.join(", --")}`, usage);
  for (const group of spec.oneOf) {
    if (!group.flags.some((k) => values[k] !== undefined)) throw new UsageError(group.missing, usage);
  }
  return { command, values, positionals };
}

async function run(argv: string[]): Promise<{ json: unknown; text: string }> {
  const { command, values, positionals } = parse(argv);
  const { organisations, auth, deliveries, webhook } = clients();

  switch (command) {
    case "org create": {
      const res = await organisations.createOrganisation({
        name: values.name as string,
        ownerEmail: values.email as string,
        ownerPassword: values.password as string,
      });
      const json = {
        organisation: { id: res.organisation!.id, name: res.organisation!.name },
        user: { id: res.owner!.id, email: res.owner!.email },
      };
      return { json, text: `organisation ${json.organisation.id} "${json.organisation.name}"\nuser ${json.user.id} ${json.user.email}` };
    }
    case "client create":
      return createClient(auth, values);
    case "client list":
      return listClients(auth, values);
    case "client delete":
      return deleteClient(auth, positionals[0]!);
    case "contact create":
    case "contact update": {
      const fields = contactFields(values);
      const organisationId = values.org as string;
      const res =
        command === "contact create"
          ? await organisations.createContact({ organisationId, fields })
          : await organisations.updateContact({ organisationId, id: values.id as string, fields });
      const json = contactJson(res.contact!);
      const name = [json.first_name, json.last_name].filter(Boolean).join(" ");
      return { json, text: `contact ${json.id} ${name}${json.email ? ` <${json.email}>` : ""}` };
    }
    case "subscriptions rotate-secret": {
      if (!/^[1-9]\d{0,15}$/.test(positionals[0]!)) throw new UsageError(`ID: expected a subscription id (a positive whole number), not ${JSON.stringify(positionals[0]!.slice(0, 40))}`);
      return rotateSecret(webhook, { organisationId: values.org as string, clientId: values.client as string, id: BigInt(positionals[0]!) });
    }
    case "secrets reencrypt":
      return reencryptSecrets(webhook);
    case "deliveries failed": {
      const limit = values.limit === undefined ? 50 : wholeNumber("limit", values.limit as string, 1, 100);
      const res = await deliveries.listFailedDeliveries({ organisationId: (values.org as string | undefined) ?? "", pageSize: limit });
      const list = res.deliveries.map(ownedDeliveryJson);
      const lines = list.map(
        (d) =>
          `delivery ${d.id}  ${d.updated_at}  ${d.event_type} ${d.event_id}  subscription ${d.subscription_id} (org ${d.organisation_id}, client ${d.client_id})  ${d.attempts} attempts, last: ${d.error ?? d.status_code ?? "no answer"}`,
      );
      return { json: { deliveries: list }, text: lines.length ? lines.join("\n") : "no failed deliveries" };
    }
    case "deliveries log": {
      const limit = values.limit === undefined ? 50 : wholeNumber("limit", values.limit as string, 1, 100);
      const subscriptionId = BigInt(wholeNumber("subscription", values.subscription as string, 1, Number.MAX_SAFE_INTEGER));
      return deliveriesLog({ organisationId: values.org as string, clientId: values.client as string, subscriptionId, limit }, deliveries, webhook);
    }
    case "deliveries retry": {
      const res = await deliveries.retryDelivery({
        owner: { organisationId: values.org as string, clientId: values.client as string },
        subscriptionId: BigInt(wholeNumber("subscription", values.subscription as string, 1, Number.MAX_SAFE_INTEGER)),
        deliveryId: BigInt(wholeNumber("id", values.id as string, 1, Number.MAX_SAFE_INTEGER)),
      });
      const json = deliveryJson(res.delivery!);
      return { json, text: `delivery ${json.id} ${json.status}, next attempt ${json.next_retry_at ?? "none"}` };
    }
    case "deliveries recover": {
      const [subscriptionId, since] = [positionals[0]!, values.since as string];
      const problem = recoverUsageProblem(subscriptionId, since);
      if (problem) throw new UsageError(problem);
      return recoverDeliveries(deliveries, { organisationId: values.org as string, clientId: values.client as string, subscriptionId, since });
    }
  }
  throw new UsageError(`unknown command: ${command}`);
}

function wholeNumber(flag: string, value: string, min: number, max: number): number {
  const n = /^\d{1,16}$/.test(value) ? Number(value) : NaN;
  if (!(n >= min && n <= max)) throw new UsageError(`--${flag}: expected a whole number from ${min} to ${max}`);
  return n;
}

/** snake_case name of a Connect code: "not_found", "invalid_argument", … */
function codeName(code: Code): string {
  return (Code[code] ?? "unknown").replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

function fail(json: boolean, status: 1 | 2, error: string, description: string, text: string): never {
  if (json) process.stdout.write(`${JSON.stringify({ error, error_description: description })}\n`);
  else process.stderr.write(text);
  process.exit(status);
}

const argv = process.argv.slice(2);
const json = argv.includes("--json");
if (argv.includes("--help") || argv.includes("-h") || argv[0] === "help") {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
try {
  const result = await run(argv);
  process.stdout.write(json ? `${JSON.stringify(result.json)}\n` : `${result.text}\n`);
} catch (err) {
  if (err instanceof UsageError) fail(json, 2, "invalid_usage", err.message, `bizcard: ${err.message}\n${err.usage}\n`);
  const e = ConnectError.from(err);
  const service = serviceOf(argv);
  const message = explainFailure(e, service, serviceUrl(service), internalCredential());
  fail(json, 1, codeName(e.code), message, `bizcard: ${message} (${codeName(e.code)})\n`);
}
