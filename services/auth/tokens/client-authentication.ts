// Client authentication at the token, introspection and revocation endpoints
// (RFC 6749 §2.3, §3.2.1), limited against brute force per client and address.
// The client's row and its failure counters are read in one statement, shared
// by the requests that arrive while one is in flight (statement-batcher.ts).
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
   * Name the statement, planned once per connection. Not on the embedded
   * PGlite, whose one session serves every connection: the name would exist.
   */
  preparedStatements?: boolean;
}

type ClientRow = AuthenticatedClient & {
  secret_hash: string | null;
  registration: string;
  token_endpoint_auth_method: string | null;
};

/**
 * RFC 7591 §2: "token_endpoint_auth_method: String indicator of the
 * requested authentication method for the token endpoint." A client that
 * registered one uses that one; an operator's client (null) may use either.
 */
const WHERE_SECRET_GOES: Record<string, string> = {
  client_secret_basic: "send the secret with HTTP Basic (the Authorization header), not in the body",
  client_secret_post: "send the secret in the body (client_secret), not with HTTP Basic",
};

const FAILED = "client authentication failed";

/** Why the credentials are refused, or undefined when they are right. */
function refusal(row: ClientRow | undefined, credentials: ClientCredentials): string | undefined {
  if (!row) return FAILED;
  if (row.public) return credentials.clientSecret === "" ? undefined : `${FAILED}: a public client has no secret`;
  if (credentials.method === "none")
    return "client authentication is required: send the client secret (Basic or client_secret)";
  const registered = row.token_endpoint_auth_method;
  if (registered !== null && registered !== credentials.method && registered in WHERE_SECRET_GOES) {
    return `${FAILED}: this client is registered with token_endpoint_auth_method ${registered}; ${WHERE_SECRET_GOES[registered]}`;
  }
  return secretMatches(credentials.clientSecret, row.secret_hash) ? undefined : FAILED;
}

export const CLIENT_AUTHENTICATION_REQUIRED =
  "client authentication is required (client_id and client_secret, or Basic)";

const METHODS = new Set(["client_secret_basic", "client_secret_post", "none"]);

type Read = { clientId: string; counterKeys: string[] };
type Found = { row: ClientRow | undefined; counters: StoredCounter[] };

/** Reads each client's row (none when unknown) and its failure counters, a batch to a statement. */
function clientReader(deps: ClientAuthenticationDeps): (read: Read) => Promise<Found> {
  const knex = deps.orm.em.getKnex();
  const counters = deps.limits.countersSql('(select "key" from "counter" where "counter"."n" = q."n")');
  const text = `with "counter" as (select * from unnest(?::bigint[], ?::text[]) as k("n", "key"))
    select q."n", c."id", c."public", c."owner_organisation_id" as "ownerOrganisationId", c."scopes",
           c."grant_types" as "grantTypes", c."secret_hash", c."registration", c."token_endpoint_auth_method",
           ${counters} as "counters"
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
 * credentials MUST authenticate with the authorization server". Public
 * clients send only client_id (method "none"); the gateway refuses a secret
 * sent both with Basic and in the body (RFC 6749 §2.3).
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
    // wrong one is counted; a right one is refused while the counters read
    // with the row are over (the hot path writes nothing).
    const failure = refusal(row, credentials);
    if (failure !== undefined || !row) {
      await deps.limits.consume("client", clientId, remoteAddress);
      throw new InvalidClient(failure ?? FAILED);
    }
    const limited = deps.limits.overLimit("client", found.counters);
    if (limited) throw limited;
    const { secret_hash, registration, token_endpoint_auth_method, ...client } = row;
    return client;
  };
}
