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

type Pair = { organisationId: string; clientId: string };

export async function enqueueGrantRevoked(
  em: EntityManager,
  options: EventOptions,
  pair: Pair,
  reason: GrantRevocationReason,
): Promise<void> {
  const occurTime = timestampFromDate(new Date());
  const event = create(GrantRevokedSchema, { eventId: v7(), ...pair, occurTime, reason });
  await enqueue(em, options, "grant.revoked", event.eventId, pair, toBinary(GrantRevokedSchema, event));
}

export async function enqueueTokenRevoked(
  em: EntityManager,
  options: EventOptions,
  pair: Pair,
  accessTokenHashes: string[],
): Promise<void> {
  const occurTime = timestampFromDate(new Date());
  const event = create(TokenRevokedSchema, { eventId: v7(), ...pair, accessTokenHashes, occurTime });
  await enqueue(em, options, "token.revoked", event.eventId, pair, toBinary(TokenRevokedSchema, event));
}

function enqueue(em: EntityManager, options: EventOptions, name: string, id: string, pair: Pair, payload: Uint8Array) {
  const subject = subjectFor(options.subjectPrefix, name);
  return enqueueEvent(em, options.schema, { id, subject, payload, orderKey: pair.organisationId });
}
