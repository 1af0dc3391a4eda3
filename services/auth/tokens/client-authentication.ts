// Client authentication at the token, introspection and revocation endpoints
// (RFC 6749 §2.3, §3.2.1), limited against brute force per client and address.
// The client's row and its failure counters are read in one statement, shared
// by the requests that arrive while one is in flight (statement-batcher.ts):
// under load one round trip serves many authentications.
import type { MikroORM } from "@mikro-orm/postgresql";
import { escapeIdentifier } from "pg";
import type { ClientCredentials } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import { statementBatcher, type Queued } from "../../shared/statement-batcher.js";
import { secretMatches } from "../clients/client-secret.js";
import type { AuthenticatedClient } from "../grants/grant-module.js";
import { InvalidClient, InvalidRequest } from "../oauth-errors.js";
import type { FailureLimits, StoredCounter } from "../rate-limit/failure-limits.js";

export interface ClientAuthenticationDeps {
  orm: MikroORM;
  schema: string;
  limits: FailureLimits;
  /** OAUTH_CLIENT_METADATA_DOCUMENTS: when off, a stored metadata document client is unknown (on when unset). */
  metadataDocuments?: boolean;
  /**
   * Name the statement, so that PostgreSQL parses and plans it once per
   * connection. Not on the embedded start: PGlite serves every connection
   * from one session, where a name another connection prepared already exists.
   */
  preparedStatements?: boolean;
}

interface ClientRow {
  id: string;
  public: boolean;
  owner_organisation_id: string | null;
  scopes: string[];
  grant_types: string[];
  secret_hash: string | null;
  registration: string;
  token_endpoint_auth_method: string | null;
}

/**
 * RFC 7591 §2: "token_endpoint_auth_method: String indicator of the
 * requested authentication method for the token endpoint. [...]
 * "client_secret_post": The client uses the HTTP POST parameters as defined
 * in OAuth 2.0, Section 2.3.1. "client_secret_basic": The client uses HTTP
 * Basic as defined in OAuth 2.0, Section 2.3.1." A client that registered
 * one method authenticates with that one (here, and at revocation and
 * introspection); an operator's client (null) may use either.
 */
const WHERE_SECRET_GOES: Record<string, string> = {
  client_secret_basic: "send the secret with HTTP Basic (the Authorization header), not in the body",
  client_secret_post: "send the secret in the body (client_secret), not with HTTP Basic",
};

function wrongMethod(registered: string | null, method: string): string | undefined {
  if (registered === null || registered === method || !(registered in WHERE_SECRET_GOES)) return undefined;
  return `client authentication failed: this client is registered with token_endpoint_auth_method ${registered}; ${WHERE_SECRET_GOES[registered]}`;
}

/** Why the credentials are refused, or undefined when they are right. */
function refusal(row: ClientRow | undefined, credentials: ClientCredentials): string | undefined {
  if (!row) return "client authentication failed";
  if (row.public) {
    if (credentials.clientSecret !== "") return "client authentication failed: a public client has no secret";
  } else if (credentials.method === "none") {
    return "client authentication is required: send the client secret (Basic or client_secret)";
  } else if (wrongMethod(row.token_endpoint_auth_method, credentials.method)) {
    return wrongMethod(row.token_endpoint_auth_method, credentials.method);
  } else if (!secretMatches(credentials.clientSecret, row.secret_hash)) {
    return "client authentication failed";
  }
  return undefined;
}

export const CLIENT_AUTHENTICATION_REQUIRED =
  "client authentication is required (client_id and client_secret, or Basic)";

const METHODS = new Set(["client_secret_basic", "client_secret_post", "none"]);

interface Read {
  clientId: string;
  counterKeys: string[];
}

interface Found {
  row: ClientRow | undefined;
  counters: StoredCounter[];
}

/** Reads each client's row (none when unknown) and its failure counters, a batch to a statement. */
function clientReader(deps: ClientAuthenticationDeps): (read: Read) => Promise<Found> {
  const knex = deps.orm.em.getKnex();
  const counters = deps.limits.countersSql('(select "key" from "counter" where "counter"."n" = q."n")');
  const text = `with "counter" as (select * from unnest(?::bigint[], ?::text[]) as k("n", "key"))
    select q."n", c."id", c."public", c."owner_organisation_id", c."scopes", c."grant_types", c."secret_hash",
           c."registration", c."token_endpoint_auth_method", ${counters} as "counters"
      from unnest(?::text[]) with ordinality as q("client_id", "n")
      left join ${escapeIdentifier(deps.schema)}."client" c on c."id" = q."client_id"`;
  const name = deps.preparedStatements ? { name: "client-authentication-read" } : {};
  const write = async (queued: Queued<Read, Found>[]) => {
    const n: number[] = [];
    const keys: string[] = [];
    queued.forEach((q, i) => q.item.counterKeys.forEach((key) => (n.push(i + 1), keys.push(key))));
    const values = [n, keys, queued.map((q) => q.item.clientId)];
    const { rows } = await knex
      .raw<{ rows: (ClientRow & { n: string; counters: StoredCounter[] })[] }>(text, values)
      .options(name);
    for (const r of rows) {
      const { n: number, counters: read, ...row } = r;
      queued[Number(number) - 1]!.resolve({ row: row.id === null ? undefined : row, counters: read });
    }
  };
  return statementBatcher<Read, Found>({ write });
}

export type AuthenticateClient = (
  credentials: ClientCredentials | undefined,
  remoteAddress: string,
) => Promise<AuthenticatedClient>;

/**
 * RFC 6749 §3.2.1: "Confidential clients or other clients issued client
 * credentials MUST authenticate with the authorization server [...] A client
 * MAY use the "client_id" request parameter to identify itself when sending
 * requests to the token endpoint." Public clients send only client_id
 * (method "none"); a confidential client must send its secret (Basic or in
 * the body; the gateway refuses both at once, RFC 6749 §2.3).
 */
export function createClientAuthentication(deps: ClientAuthenticationDeps): AuthenticateClient {
  const read = clientReader(deps);
  return async (credentials, remoteAddress) => {
    if (!credentials?.clientId) throw new InvalidClient(CLIENT_AUTHENTICATION_REQUIRED);
    if (!METHODS.has(credentials.method))
      throw new InvalidRequest(`unknown client authentication method ${credentials.method}`);
    const { clientId } = credentials;
    const found = await read({ clientId, counterKeys: deps.limits.counterKeys("client", clientId, remoteAddress) });
    const row =
      found.row?.registration === "metadata_document" && deps.metadataDocuments === false ? undefined : found.row;
    // The secret first, then the limits (rate-limit/failure-limits.ts): a
    // wrong one is counted atomically and answered 429 once past the limit;
    // a right one is refused too while the limit is exceeded (the counters
    // were read with the row: the hot path writes nothing).
    const failure = refusal(row, credentials);
    if (failure !== undefined || !row) {
      await deps.limits.consume("client", clientId, remoteAddress);
      throw new InvalidClient(failure ?? "client authentication failed");
    }
    const limited = deps.limits.overLimit("client", found.counters);
    if (limited) throw limited;
    return {
      id: row.id,
      public: row.public,
      ownerOrganisationId: row.owner_organisation_id,
      scopes: row.scopes,
      grantTypes: row.grant_types,
    };
  };
}
