// The owner of a webhook subscription and of its delivery log: the pair
// (organisation, client application) of bizcard.webhook.v1.Owner. Both halves
// are required; a row of another pair is NOT_FOUND (or simply not listed).
import type { Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { invalid, requireUuid } from "./validation.js";

/** Client ids are issued by the auth service; anything longer is not one. */
const CLIENT_ID_MAX_LENGTH = 255;

export interface Pair {
  organisationId: string;
  clientId: string;
}

/** The request's owner, checked: INVALID_ARGUMENT naming the field when missing or malformed. */
export function readOwner(owner: Owner | undefined): Pair {
  if (!owner) throw invalid("owner", "required");
  const organisationId = requireUuid("owner.organisation_id", owner.organisationId);
  if (!owner.clientId) throw invalid("owner.client_id", "required");
  if (owner.clientId.length > CLIENT_ID_MAX_LENGTH)
    throw invalid("owner.client_id", `at most ${CLIENT_ID_MAX_LENGTH} characters`);
  return { organisationId, clientId: owner.clientId };
}
