// bizcard: administration over RPC (CONTRACT.md, "The bizcard command").
//   bizcard org create --name NAME --email EMAIL --password PASSWORD
//   bizcard client create --name NAME --redirect-uri URI [--redirect-uri URI…] [--public] [--owner-org ID] [--scope "a b"]
//   bizcard contact create --org ID --first-name F --last-name L [--email E] [--company C] …
//   bizcard contact update --id ID [--email E] [--company C] …
// --json prints one JSON object and nothing else. A bad flag: usage, exit 2.
// An RPC failure: one line on stderr, exit 1.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { ConnectError } from "@connectrpc/connect";
import { AuthService } from "../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService, type ContactFields } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { contactJson } from "../services/shared/contact-json.js";
import { createRpcClient } from "../services/shared/rpc-client.js";

const USAGE = `usage:
  bizcard org create --name NAME --email EMAIL --password PASSWORD [--json]
  bizcard client create --name NAME --redirect-uri URI [--redirect-uri URI…] [--public] [--owner-org ID] [--scope "a b"] [--json]
  bizcard contact create --org ID (--first-name F | --last-name L) [contact fields] [--json]
  bizcard contact update --id ID [--org ID] [contact fields] [--json]
contact fields: --first-name --last-name --email --phone --company --job-title --website --address --notes

environment: ORGANISATION_RPC_URL, AUTH_RPC_URL (default http://127.0.0.1:7102, :7101),
  INTERNAL_RPC_TOKEN (default: read from DATA_DIR/internal-rpc-token, as npm start writes it)`;

class UsageError extends Error {}

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

const str = { type: "string" } as const;
const COMMANDS: Record<string, { options: ParseArgsConfig["options"]; required: string[] }> = {
  "org create": { options: { name: str, email: str, password: str }, required: ["name", "email", "password"] },
  "client create": {
    options: {
      name: str,
      "redirect-uri": { type: "string", multiple: true },
      public: { type: "boolean" },
      "owner-org": str,
      scope: str,
    },
    required: ["name"],
  },
  "contact create": { options: { org: str, ...Object.fromEntries(Object.keys(CONTACT_FLAGS).map((k) => [k, str])) }, required: ["org"] },
  "contact update": {
    options: { id: str, org: str, ...Object.fromEntries(Object.keys(CONTACT_FLAGS).map((k) => [k, str])) },
    required: ["id"],
  },
};

function internalToken(): string | undefined {
  // A list (during a rotation) sends its first credential, as the services do.
  if (process.env.INTERNAL_RPC_TOKEN?.trim()) return process.env.INTERNAL_RPC_TOKEN.split(",")[0]!.trim();
  const file = path.resolve(process.env.DATA_DIR ?? "./data", "internal-rpc-token");
  return existsSync(file) ? readFileSync(file, "utf8").trim() : undefined;
}

function clients() {
  const options = (url: string) => ({ baseUrl: url, timeoutMs: 15_000, internalToken: internalToken() });
  return {
    organisations: createRpcClient(
      OrganisationService,
      options(process.env.ORGANISATION_RPC_URL ?? `http://127.0.0.1:${process.env.ORGANISATION_RPC_PORT ?? 7102}`),
    ),
    auth: createRpcClient(AuthService, options(process.env.AUTH_RPC_URL ?? `http://127.0.0.1:${process.env.AUTH_RPC_PORT ?? 7101}`)),
  };
}

function contactFields(values: Record<string, unknown>): Partial<ContactFields> {
  const fields: Record<string, string> = {};
  for (const [flag, field] of Object.entries(CONTACT_FLAGS)) {
    if (typeof values[flag] === "string") fields[field] = values[flag] as string;
  }
  return fields;
}

async function run(argv: string[]): Promise<{ json: unknown; text: string }> {
  const command = argv.slice(0, 2).join(" ");
  const spec = COMMANDS[command];
  if (!spec) throw new UsageError(argv.length ? `unknown command: ${command}` : "no command");
  let values: Record<string, unknown>;
  try {
    ({ values } = parseArgs({
      args: argv.slice(2),
      options: { ...spec.options, json: { type: "boolean" } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const missing = spec.required.filter((k) => values[k] === undefined);
  if (missing.length) throw new UsageError(`missing --${missing.join(", --")}`);
  const { organisations, auth } = clients();

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
    case "client create": {
      const scope = typeof values.scope === "string" ? values.scope.split(/\s+/).filter(Boolean) : [];
      const res = await auth.createClient({
        name: values.name as string,
        redirectUris: (values["redirect-uri"] as string[] | undefined) ?? [],
        public: Boolean(values.public),
        ownerOrganisationId: (values["owner-org"] as string | undefined) ?? "",
        scopes: scope,
      });
      const c = res.client!;
      const json = {
        client_id: c.clientId,
        ...(res.clientSecret ? { client_secret: res.clientSecret } : {}),
        name: c.name,
        redirect_uris: c.redirectUris,
        scopes: c.scopes,
      };
      const lines = [`client_id     ${json.client_id}`];
      if (res.clientSecret) lines.push(`client_secret ${res.clientSecret}   (shown once)`);
      lines.push(`name          ${c.name}`, `redirect_uris ${c.redirectUris.join(" ")}`, `scopes        ${c.scopes.join(" ")}`);
      return { json, text: lines.join("\n") };
    }
    case "contact create":
    case "contact update": {
      const fields = contactFields(values);
      const res =
        command === "contact create"
          ? await organisations.createContact({ organisationId: values.org as string, fields })
          : await organisations.updateContact({ id: values.id as string, organisationId: (values.org as string) ?? "", fields });
      const json = contactJson(res.contact!);
      const name = [json.first_name, json.last_name].filter(Boolean).join(" ");
      return { json, text: `contact ${json.id} ${name}${json.email ? ` <${json.email}>` : ""}` };
    }
  }
  throw new UsageError(`unknown command: ${command}`);
}

try {
  const argv = process.argv.slice(2);
  const result = await run(argv);
  process.stdout.write(argv.includes("--json") ? `${JSON.stringify(result.json)}\n` : `${result.text}\n`);
} catch (err) {
  if (err instanceof UsageError) {
    process.stderr.write(`bizcard: ${err.message}\n${USAGE}\n`);
    process.exit(2);
  }
  const e = ConnectError.from(err);
  process.stderr.write(`bizcard: ${e.rawMessage || e.message} (${codeName(e)})\n`);
  process.exit(1);
}

function codeName(e: ConnectError): string {
  return ["canceled", "unknown", "invalid_argument", "deadline_exceeded", "not_found", "already_exists", "permission_denied",
    "resource_exhausted", "failed_precondition", "aborted", "out_of_range", "unimplemented", "internal", "unavailable",
    "data_loss", "unauthenticated"][e.code - 1] ?? "error";
}
