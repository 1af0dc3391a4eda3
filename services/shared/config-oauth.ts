// The OAuth settings of the configuration (config.ts): the auth service's
// tokens, pages, limits and client registration.
import { z } from "zod";
import { bool, int, origins } from "./config-fields.js";

export const oauthSettings = {
  /** Allow http redirect URIs on hosts other than loopback (development only). */
  OAUTH_ALLOW_INSECURE_REDIRECTS: bool(false),
  /** Client ID Metadata Documents: a client_id that is an https URL names the client's metadata, which the auth service fetches. */
  OAUTH_CLIENT_METADATA_DOCUMENTS: bool(true),
  /** The whole fetch of one client metadata document (connect to the end of the body), in ms; shortened to end before the RPC's deadline. */
  OAUTH_CLIENT_METADATA_TIMEOUT_MS: int(5000, 100, 60_000),
  /** PEM certificates trusted besides the system's roots when fetching client metadata documents (a private CA). */
  OAUTH_CLIENT_METADATA_CA_FILE: z
    .string()
    .optional()
    .transform((v) => (v?.trim() ? v.trim() : undefined)),
  /** Dynamic client registration (RFC 7591) at POST /oauth/register (off by default). */
  OAUTH_DYNAMIC_REGISTRATION: bool(false),
  /** Dynamic registrations (POST /oauth/register) per hour from one address, before 429. */
  OAUTH_REGISTRATION_LIMIT: int(20, 1, 1_000_000),
  /**
   * The browser origins (besides PUBLIC_URL's own) whose pages may call /mcp:
   * the endpoint's Origin check and its CORS answers. Comma-separated; none by default.
   */
  MCP_ALLOWED_ORIGINS: origins(),
  /** Client ID Metadata Document fetches (not cache hits) per minute caused by one address's authorization requests, before 429. */
  OAUTH_CLIENT_METADATA_FETCH_LIMIT: int(30, 1, 1_000_000),
  /** OAuth: access token lifetime (expires_in). */
  ACCESS_TOKEN_TTL_SECONDS: int(3600, 60, 86_400),
  /** OAuth: a refresh token's lifetime; each rotation issues a new one with a fresh lifetime. */
  REFRESH_TOKEN_TTL_SECONDS: int(180 * 86_400, 3600, 730 * 86_400),
  /** OAuth: how long an authorization code can be exchanged (single use). */
  AUTHORIZATION_CODE_TTL_SECONDS: int(60, 10, 600),
  /** OAuth: the same refresh token presented again within this long returns the same new pair (a lost answer's retry). */
  REFRESH_RETRY_WINDOW_SECONDS: int(30, 0, 300),
  /** Login and consent: how long an authorization request waits for the member. */
  INTERACTION_TTL_SECONDS: int(600, 60, 3600),
  /** A member's login session on the pages (absolute lifetime). */
  SESSION_TTL_SECONDS: int(8 * 3600, 300, 30 * 86_400),
  /** Failed logins per minute for one email from one address, before 429. */
  RATE_LIMIT_LOGIN_FAILURES: int(10, 1, 100_000),
  /** Failed client authentications per minute for one client_id from one address, before 429. */
  RATE_LIMIT_CLIENT_AUTH_FAILURES: int(10, 1, 100_000),
  /** Failed logins and client authentications per minute from one address, whatever the email or client, before 429. */
  RATE_LIMIT_ADDRESS_FAILURES: int(100, 1, 1_000_000),
};
