// RFC 8707 resource indicators: the `resource` parameter naming one of this
// platform's protected resources (services/shared/protected-resources.ts).
// Tokens and codes store the resource's name, not its URL, so that a change
// of PUBLIC_URL does not orphan them.
import { RESOURCE_NAMES, type ProtectedResources, type ResourceName } from "../shared/protected-resources.js";
import { InvalidTarget } from "./oauth-errors.js";

/**
 * RFC 8707 §2: "The value of the resource parameter MUST be an absolute URI".
 * A value names a resource when it is its identifier, or that with one "/"
 * added (what URL.href makes of an identifier without a path).
 */
function resourceNamed(resources: ProtectedResources, value: string): ResourceName {
  const name = RESOURCE_NAMES.find((n) => value === resources[n].identifier || value === `${resources[n].identifier}/`);
  if (!name)
    throw new InvalidTarget(`resource must be one of ${RESOURCE_NAMES.map((n) => resources[n].identifier).join(", ")}`);
  return name;
}

/**
 * The resources an authorization request names (RFC 8707 §2: "may be
 * used multiple times"), once each, in the server's order.
 */
export function resourcesNamed(resources: ProtectedResources, values: readonly string[]): ResourceName[] {
  const named = new Set(values.map((v) => resourceNamed(resources, v)));
  return RESOURCE_NAMES.filter((n) => named.has(n));
}

/** A token request's resource, if named. A token has one audience: more than one is refused. */
export function tokenResource(resources: ProtectedResources, values: readonly string[]): ResourceName | undefined {
  const named = resourcesNamed(resources, values);
  if (named.length > 1) throw new InvalidTarget("one resource per token: ask once per resource");
  return named[0];
}

/**
 * The audience of a token under an authorization request that named `allowed`
 * (empty: the REST API only); the requested resource must be one of them.
 * Without one: the only one named, else the REST API when it may be had.
 */
export function audienceWithin(
  resources: ProtectedResources,
  allowed: readonly ResourceName[],
  requested: ResourceName | undefined,
): ResourceName {
  const permitted: readonly ResourceName[] = allowed.length ? allowed : ["api"];
  if (requested !== undefined) {
    if (!permitted.includes(requested)) {
      const names = permitted.map((n) => resources[n].identifier).join(", ");
      throw new InvalidTarget(`resource was not named by the authorization request, which allows: ${names}`);
    }
    return requested;
  }
  if (permitted.length === 1) return permitted[0]!;
  if (permitted.includes("api")) return "api";
  throw new InvalidTarget("resource is required: the authorization request named several");
}
