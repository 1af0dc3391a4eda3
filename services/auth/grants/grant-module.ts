// What a grant module (one per grant type) exports: its grant_type, the
// parameters it requires, and its handler, which runs once the token endpoint
// (tokens/token-endpoint.ts) has checked them and authenticated the client.
// tokens/ depends on grants/, never the reverse.
import type { MikroORM } from "@mikro-orm/postgresql";
import type { ExchangeTokenRequest, ExchangeTokenResponse } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import type { ProtectedResources } from "../../shared/protected-resources.js";
import type { AccessTokenToIssue, IssuedTokens, TokenTables } from "./issue-tokens.js";
import type { GrantType } from "../clients/grant-types.js";
import type { GrantStore } from "./grant-store.js";

/** A client whose credentials were right (tokens/client-authentication.ts), as its registration says. */
export interface AuthenticatedClient {
  id: string;
  public: boolean;
  ownerOrganisationId: string | null;
  scopes: string[];
  grantTypes: string[];
}

export interface GrantDeps {
  orm: MikroORM;
  tables: TokenTables;
  grants: GrantStore;
  refreshRetryWindowSeconds: number;
  /** The protected resources a token may be for (RFC 8707 audiences). */
  resources: ProtectedResources;
  /** Issues an access token of no grant, committed on its own (issue-tokens.ts accessTokenIssuer). */
  issueAccessToken(t: AccessTokenToIssue): Promise<IssuedTokens>;
}

export interface GrantModule {
  grantType: GrantType;
  /** The parameters it cannot go without: the name on the wire, the field of ExchangeTokenRequest. */
  required: readonly { name: string; field: "code" | "refreshToken" }[];
  handle(context: {
    deps: GrantDeps;
    client: AuthenticatedClient;
    request: ExchangeTokenRequest;
  }): Promise<ExchangeTokenResponse>;
}
