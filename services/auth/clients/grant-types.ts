// The grant types a client may use at the token endpoint (RFC 7591 §2
// "grant_types"), and the defaults when a registration names none.
import { invalid } from "../../shared/validation.js";

export const GRANT_TYPES = ["authorization_code", "refresh_token", "client_credentials"] as const;
export type GrantType = (typeof GRANT_TYPES)[number];

/**
 * RFC 6749 §5.2 unauthorized_client: "The authenticated client is not authorized to use this authorization grant type".
 */
export const allowsGrantType = (registered: readonly string[], grantType: GrantType): boolean =>
  registered.includes(grantType);

/**
 * Empty means authorization_code and refresh_token (for a client with a
 * redirect URI), plus client_credentials for a confidential client an
 * organisation owns, the only kind that may use it. In GRANT_TYPES order.
 */
export function checkGrantTypes(
  requested: string[],
  client: { public: boolean; ownerOrganisationId: string | null; redirectUris: string[] },
): GrantType[] {
  const unknown = requested.filter((g) => !(GRANT_TYPES as readonly string[]).includes(g));
  if (unknown.length)
    throw invalid("grant_types", `unknown grant type ${unknown.join(", ")}; known: ${GRANT_TYPES.join(" ")}`);
  if (requested.length === 0) {
    const owned = client.ownerOrganisationId !== null && !client.public;
    return GRANT_TYPES.filter((g) => (g === "client_credentials" ? owned : client.redirectUris.length > 0));
  }
  if (requested.includes("client_credentials") && (client.public || client.ownerOrganisationId === null)) {
    throw invalid(
      "grant_types",
      "client_credentials is only for confidential clients owned by an organisation (owner_organisation_id)",
    );
  }
  // RFC 7591 §2.1: refresh_token is only useful with a grant that issues one.
  if (requested.includes("refresh_token") && !requested.includes("authorization_code")) {
    throw invalid("grant_types", "refresh_token needs authorization_code");
  }
  if (requested.includes("authorization_code") && client.redirectUris.length === 0) {
    throw invalid("redirect_uris", "at least one for a client that uses authorization_code");
  }
  return GRANT_TYPES.filter((g) => requested.includes(g));
}
