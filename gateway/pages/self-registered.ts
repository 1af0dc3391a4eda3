// Which clients the pages mark as not registered by the operator: those that
// registered themselves (RFC 7591) and those known by a Client ID Metadata
// Document (their client_id is the document's https URL). Their names are
// their own claims, so the consent page says so and names where the answer goes.
import { ClientRegistration } from "../../gen/bizcard/auth/v1/auth_pb.js";

export interface SelfRegistered {
  /** A metadata document client: the URL that identifies it. */
  identifiedBy?: string;
}

/** How a page marks a client of this registration, or undefined for an operator's client. */
export function selfRegistered(
  registration: ClientRegistration | undefined,
  clientId: string,
): SelfRegistered | undefined {
  if (registration === ClientRegistration.DYNAMIC) return {};
  if (registration === ClientRegistration.METADATA_DOCUMENT) return { identifiedBy: clientId };
  return undefined;
}
