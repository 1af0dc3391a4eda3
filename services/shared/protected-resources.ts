// The protected resources this platform serves (RFC 9728): the REST API at
// PUBLIC_URL and the MCP endpoint at PUBLIC_URL/mcp, each with its resource
// identifier (RFC 8707 audience) and metadata URL. A token is issued for one
// of them and refused by the other.

export type ResourceName = "api" | "mcp";

export const RESOURCE_NAMES: readonly ResourceName[] = ["api", "mcp"];

export interface ProtectedResource {
  name: ResourceName;
  /** RFC 9728 §2 resource: what tokens name as their audience and clients send as `resource`. */
  identifier: string;
  /** RFC 9728 §3.1: the well-known URI inserted between the host and the identifier's path. */
  metadataUrl: string;
  /** The gateway's route of that metadata (its path on this server). */
  metadataPath: string;
}

export type ProtectedResources = Record<ResourceName, ProtectedResource>;

const WELL_KNOWN = "/.well-known/oauth-protected-resource";

/** RFC 9728 §3.1: the well-known suffix "is inserted [...] between the host component and the path". */
function metadataUrlOf(identifier: string): string {
  const url = new URL(identifier);
  const path = url.pathname === "/" ? "" : url.pathname.replace(/\/+$/, "");
  return `${url.origin}${WELL_KNOWN}${path}`;
}

/** The two resources of a gateway whose issuer (PUBLIC_URL, no trailing slash) is `issuer`. */
export function protectedResources(issuer: string): ProtectedResources {
  const base = issuer.replace(/\/+$/, "");
  const make = (name: ResourceName, suffix: string): ProtectedResource => ({
    name,
    identifier: `${base}${suffix}`,
    metadataUrl: metadataUrlOf(`${base}${suffix}`),
    metadataPath: `${WELL_KNOWN}${suffix}`,
  });
  return { api: make("api", ""), mcp: make("mcp", "/mcp") };
}
