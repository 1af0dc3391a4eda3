// How a metadata document that cannot be used is answered: on the page, never
// at a redirect URI (the document is what would say which one is right).
//
// draft-ietf-oauth-client-id-metadata-document: "If authorization server
// encounters an error response when retrieving the client registration
// information, the authorization server SHOULD abort the authorization
// request."
import { InvalidRequest, onPageOnly } from "../../oauth-errors.js";

/** A metadata document (or its URL) that cannot be used; `what` completes "the client's metadata document at <url> …". */
export class DocumentRefusal extends Error {
  constructor(
    readonly url: string,
    readonly what: string,
    options?: { cause?: unknown },
  ) {
    super(`the client's metadata document at ${url} ${what}`, options);
    this.name = "DocumentRefusal";
  }

  /** invalid_request, shown on the page (OAuthError.redirect_allowed false). */
  toOAuthFailure(): InvalidRequest {
    return onPageOnly(new InvalidRequest(this.message));
  }
}

/** An authorization request's redirect_uri that the client's document does not list. */
export const unlistedRedirectUri = (url: string): string =>
  `the client's metadata document at ${url} does not list this redirect_uri among its redirect_uris`;
