// grant.revoked and token.revoked, written to the auth schema's outbox as the
// last statement of the transaction that revoked (services/shared/outbox/writer.ts).
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import { v7 } from "uuid";
import { GrantRevokedSchema, TokenRevokedSchema } from "../../../gen/bizcard/events/v1/events_pb.js";
import { subjectFor } from "../../shared/event-bus/event-bus.js";
import { enqueueEvent } from "../../shared/outbox/writer.js";
import type { GrantRevocationReason } from "./grant-store.js";

export interface EventOptions {
  schema: string;
  subjectPrefix: string;
}

export async function enqueueGrantRevoked(
  em: EntityManager,
  options: EventOptions,
  pair: { organisationId: string; clientId: string },
  reason: GrantRevocationReason,
): Promise<void> {
  const event = create(GrantRevokedSchema, {
    eventId: v7(),
    ...pair,
    occurTime: timestampFromDate(new Date()),
    reason,
  });
  await enqueueEvent(em, options.schema, {
    id: event.eventId,
    subject: subjectFor(options.subjectPrefix, "grant.revoked"),
    payload: toBinary(GrantRevokedSchema, event),
    orderKey: pair.organisationId,
  });
}

export async function enqueueTokenRevoked(
  em: EntityManager,
  options: EventOptions,
  pair: { organisationId: string; clientId: string },
  accessTokenHashes: string[],
): Promise<void> {
  const event = create(TokenRevokedSchema, {
    eventId: v7(),
    ...pair,
    accessTokenHashes,
    occurTime: timestampFromDate(new Date()),
  });
  await enqueueEvent(em, options.schema, {
    id: event.eventId,
    subject: subjectFor(options.subjectPrefix, "token.revoked"),
    payload: toBinary(TokenRevokedSchema, event),
    orderKey: pair.organisationId,
  });
}
