// A metadata document (or its URL) that cannot be used. It is refused on the
// page, never at a redirect URI (the document is what would say which one is
// right): draft-ietf-oauth-client-id-metadata-document "SHOULD abort the
// authorization request."

/** `what` completes "the client's metadata document at <url> …". */
export class DocumentRefusal extends Error {
  constructor(
    readonly url: string,
    what: string,
    options?: { cause?: unknown },
  ) {
    super(`the client's metadata document at ${url} ${what}`, options);
    this.name = "DocumentRefusal";
  }
}

/** An authorization request's redirect_uri that the client's document does not list. */
export const unlistedRedirectUri = (url: string): string =>
  `the client's metadata document at ${url} does not list this redirect_uri among its redirect_uris`;
