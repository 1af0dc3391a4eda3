// Client authentication at the token, introspection and revocation endpoints
// (RFC 6749 §2.3, §3.2.1), limited against brute force per client and address.
import type { ClientCredentials } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import { secretMatches } from "../clients/client-secret.js";
import type { AuthenticatedClient } from "../grants/grant-module.js";
import { InvalidClient, InvalidRequest } from "../oauth-errors.js";
import type { FailureLimits } from "../rate-limit/failure-limits.js";
import type { MikroORM } from "@mikro-orm/postgresql";

export interface ClientAuthenticationDeps {
  orm: MikroORM;
  schema: string;
  limits: FailureLimits;
  /** OAUTH_CLIENT_METADATA_DOCUMENTS: when off, a stored metadata document client is unknown (on when unset). */
  metadataDocuments?: boolean;
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

/**
 * The credentials secretAuthenticatesSql() judges: a secret sent Basic or in
 * the body (a public client's "none" is judged by refusal() only).
 */
export const presentsSecret = (credentials: ClientCredentials): boolean =>
  (credentials.method === "client_secret_basic" || credentials.method === "client_secret_post") && credentials.clientSecret !== "";

/**
 * refusal() for credentials that presentsSecret(), as a SQL boolean on a row
 * `client` of the client table, `secretHash` and `method` being where the
 * statement binds hashSecret() of the presented secret and the credentials'
 * method: true when they are right (the client is confidential, registered
 * no other method, and its secret's hash matches). Comparing hashes in SQL,
 * not in constant time, tells an attacker nothing: the secret is 256 random
 * bits (clients/client-secret.ts).
 */
export const secretAuthenticatesSql = (client: string, secretHash: string, method: string): string =>
  `(not ${client}."public" and (${client}."token_endpoint_auth_method" is null or ${client}."token_endpoint_auth_method" = ${method}) and ${client}."secret_hash" = ${secretHash})`;

/**
 * A SQL boolean on a row `client` of the client table: false for a client
 * authenticateClient() treats as unknown (a stored metadata document
 * client, while OAUTH_CLIENT_METADATA_DOCUMENTS is off).
 */
export const clientKnownSql = (client: string, metadataDocuments: boolean | undefined): string =>
  metadataDocuments === false ? `${client}."registration" <> 'metadata_document'` : "true";

export const CLIENT_AUTHENTICATION_REQUIRED = "client authentication is required (client_id and client_secret, or Basic)";

const METHODS = new Set(["client_secret_basic", "client_secret_post", "none"]);

/**
 * RFC 6749 §3.2.1: "Confidential clients or other clients issued client
 * credentials MUST authenticate with the authorization server [...] A client
 * MAY use the "client_id" request parameter to identify itself when sending
 * requests to the token endpoint." Public clients send only client_id
 * (method "none"); a confidential client must send its secret (Basic or in
 * the body; the gateway refuses both at once, RFC 6749 §2.3).
 */
export async function authenticateClient(
  deps: ClientAuthenticationDeps,
  credentials: ClientCredentials | undefined,
  remoteAddress: string,
): Promise<AuthenticatedClient> {
  if (!credentials?.clientId) throw new InvalidClient(CLIENT_AUTHENTICATION_REQUIRED);
  if (!METHODS.has(credentials.method)) throw new InvalidRequest(`unknown client authentication method ${credentials.method}`);
  const { clientId } = credentials;
  // The secret first, then the limits (rate-limit/failure-limits.ts): a
  // wrong one is counted atomically and answered 429 once past the limit; a
  // right one is refused too while the limit is exceeded (read in parallel
  // with the client's row: the hot path writes nothing).
  const [rows, limited] = await Promise.all([
    deps.orm.em
      .fork()
      .execute<ClientRow[]>(
        `select "id", "public", "owner_organisation_id", "scopes", "grant_types", "secret_hash", "registration", "token_endpoint_auth_method" from "${deps.schema}"."client" where "id" = ?`,
        [clientId],
      ),
    deps.limits.check("client", clientId, remoteAddress).then(
      () => undefined,
      (err: unknown) => err,
    ),
  ]);
  const row = rows[0]?.registration === "metadata_document" && deps.metadataDocuments === false ? undefined : rows[0];
  const failure = refusal(row, credentials);
  if (failure !== undefined || !row) {
    await deps.limits.consume("client", clientId, remoteAddress);
    throw new InvalidClient(failure ?? "client authentication failed");
  }
  if (limited !== undefined) throw limited;
  return {
    id: row.id,
    public: row.public,
    ownerOrganisationId: row.owner_organisation_id,
    scopes: row.scopes,
    grantTypes: row.grant_types,
  };
}
