// What the browser flow needs from grants and tokens: the seam between the
// interaction side (login, consent, connected applications) and the token
// side (codes, grants, tokens, revocation). Implemented in grants.ts.
import type { Grant } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import type { ResourceName } from "../../shared/protected-resources.js";

export interface CodeRequest {
  clientId: string;
  organisationId: string;
  memberId: string;
  /** The redirect_uri the code goes to: as the authorization request sent it, or the client's only one. */
  redirectUri: string;
  /**
   * The authorization request left redirect_uri out (the client's only one
   * was used): the token request then may leave it out too, and if it sends
   * one, that must be this one. Otherwise (the default) it must repeat it.
   */
  redirectUriOmitted?: boolean;
  /** The scopes consented to, in the server's order. */
  scopes: string[];
  /** RFC 8707: the resources the authorization request named (none: the REST API only). */
  resources?: ResourceName[];
  /** RFC 7636 S256 challenge; "" when the (confidential) client sent none. */
  codeChallenge: string;
}

/** Why a grant ended: GrantRevoked.reason. */
export type GrantRevocationReason = "withdrawn" | "refresh_token_reuse" | "authorization_code_replay";

export interface GrantStore {
  /**
   * Records the organisation's grant to the client (created, or its scopes
   * widened and update time moved) and issues a single-use authorization code
   * bound to client, redirect_uri and challenge, in one transaction. Returns the code.
   */
  issueAuthorizationCode(request: CodeRequest): Promise<string>;
  /** The organisation's grants with the client names, newest first. */
  listGrants(organisationId: string): Promise<Grant[]>;
  /**
   * Ends the grant: deletes it and every token of the pair, and publishes
   * bizcard.grant.revoked (outbox, same transaction). False when there was none.
   */
  revokeGrant(organisationId: string, clientId: string, reason: GrantRevocationReason): Promise<boolean>;
}
