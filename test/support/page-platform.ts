// The platform behind the OAuth pages, for the page and browser tests: the
// organisation and auth services and a gateway listening on the port
// PUBLIC_URL names (so that iss and the cookie agree with the address the
// client uses), plus an organisation with a member. A use of platform.ts.
import type { ServiceApp } from "../../services/shared/service-app.js";
import { startPlatform, type Platform } from "./platform.js";
import type { StartedService } from "./services.js";

export interface PagePlatform {
  /** The gateway's base URL (http://127.0.0.1:port), which is also its PUBLIC_URL. */
  base: string;
  organisationId: string;
  member: { email: string; password: string };
  auth: StartedService<ServiceApp>;
  /** Another gateway in front of the same services whose PUBLIC_URL is https. */
  buildHttpsGateway(): Promise<{ base: string; close(): Promise<void> }>;
  createClient: Platform["createClient"];
  stop(): Promise<void>;
}

export async function startPagePlatform(prefix: string): Promise<PagePlatform> {
  const member = { email: `${prefix}-owner@pages.test`, password: "correct horse battery" };
  const platform = await startPlatform({
    token: "p".repeat(40),
    auth: true,
    gateway: { publicUrlPort: true, serviceUrls: {} },
    member: { organisation: `${prefix} Org`, ...member },
  });
  return {
    base: platform.base,
    organisationId: platform.organisationId,
    member,
    auth: platform.auth,
    buildHttpsGateway: () => platform.addGateway({ publicUrl: "https://bizcard.test", serviceUrls: {} }),
    createClient: platform.createClient,
    stop: platform.stop,
  };
}

/** A PKCE pair (RFC 7636 §4.1, §4.2: S256). */
export async function pkcePair(): Promise<{ verifier: string; challenge: string }> {
  const { createHash, randomBytes } = await import("node:crypto");
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}
