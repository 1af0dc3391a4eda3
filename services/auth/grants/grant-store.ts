// What the browser flow needs from grants and tokens: the seam between the
// interaction side and the token side. Implemented in grants.ts.
import type { Grant } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import type { ResourceName } from "../../shared/protected-resources.js";

export interface CodeRequest {
  clientId: string;
  organisationId: string;
  memberId: string;
  /** The redirect_uri the code goes to: as the authorization request sent it, or the client's only one. */
  redirectUri: string;
  /** The authorization request named none: the token request may name none too, or only this one. */
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
  /** Records the grant (created, or its scopes widened) and issues a single-use code for it, in one transaction. */
  issueAuthorizationCode(request: CodeRequest): Promise<string>;
  /** The organisation's grants with the client names, newest first. */
  listGrants(organisationId: string): Promise<Grant[]>;
  /** Deletes the grant and every token of the pair, and publishes grant.revoked. False when there was none. */
  revokeGrant(organisationId: string, clientId: string, reason: GrantRevocationReason): Promise<boolean>;
}
