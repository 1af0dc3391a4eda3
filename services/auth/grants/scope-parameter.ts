// The scope parameter of a token request (RFC 6749 §3.3), which may only narrow.
import { InvalidRequest, InvalidScope } from "../oauth-errors.js";
import { ALL_SCOPES } from "../scopes.js";

/**
 * RFC 6749 §3.3: "scope = scope-token *( SP scope-token )". RFC 6749 §6: "The
 * requested scope MUST NOT include any scope not originally granted by the
 * resource owner, and if omitted is treated as equal to the scope originally
 * granted by the resource owner." Returned in the server's order.
 */
export function narrowScope(requested: string, allowed: readonly string[]): string[] {
  if (requested === "") return [...allowed];
  const asked = requested.split(" ");
  if (asked.some((s) => s === "")) throw new InvalidRequest("scope must be scope tokens separated by single spaces");
  const outside = asked.filter((s) => !allowed.includes(s));
  if (outside.length)
    throw new InvalidScope(`scope ${outside.join(" ")} was not granted; at most: ${allowed.join(" ")}`);
  return ALL_SCOPES.filter((s) => asked.includes(s));
}
