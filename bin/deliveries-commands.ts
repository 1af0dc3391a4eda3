// `bizcard deliveries …`: the delivery service, in the JSON the owner's REST
// routes answer. failed lists the deliveries that gave up, every owner's; log
// is a subscription's delivery log and whether it is active, disabled or
// deleted and why (also after its deletion, while its log is kept); retry
// queues one more attempt now; recover, after a receiver's outage, one new
// attempt for every delivery since a time that failed, oldest first.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { z } from "zod";
import { attemptJson, deliveryJson, ownedDeliveryJson } from "../gateway/routes/delivery-json.js";
import type { RecoveredJson } from "../gateway/routes/subscription-recover.js";
import { subscriptionOrEnd } from "../services/delivery/subscription-or-end.js";
import { subscriptionState } from "../services/delivery/subscription-state.js";
import { UsageError, subscriptionId, wholeNumber, type CommandRun } from "./cli-commands.js";

const RFC3339 = z.iso.datetime({ offset: true });

const limitOf = (values: Record<string, unknown>) =>
  values.limit === undefined ? 50 : wholeNumber("limit", values.limit as string, 1, 100);
const idOf = (values: Record<string, unknown>, flag: string) =>
  BigInt(wholeNumber(flag, values[flag] as string, 1, Number.MAX_SAFE_INTEGER));
const ownerOf = (values: Record<string, unknown>) => ({
  organisationId: values.org as string,
  clientId: values.client as string,
});

export const DELIVERY_COMMANDS: Record<string, CommandRun> = {
  async "deliveries failed"({ deliveries }, values) {
    const res = await deliveries.listFailedDeliveries({
      organisationId: (values.org as string | undefined) ?? "",
      pageSize: limitOf(values),
    });
    const list = res.deliveries.map(ownedDeliveryJson);
    const lines = list.map(
      (d) =>
        `delivery ${d.id}  ${d.updated_at}  ${d.event_type} ${d.event_id}  subscription ${d.subscription_id} (org ${d.organisation_id}, client ${d.client_id})  ${d.attempts} attempts, last: ${d.error ?? d.status_code ?? "no answer"}`,
    );
    return { json: { deliveries: list }, text: lines.length ? lines.join("\n") : "no failed deliveries" };
  },

  async "deliveries log"({ deliveries, webhook }, values) {
    const pageSize = limitOf(values);
    const id = idOf(values, "subscription");
    const owner = ownerOf(values);
    const { subscription, end, missing } = await subscriptionOrEnd(webhook, owner, id);
    const res = await deliveries.listDeliveryAttempts({ owner, subscriptionId: id, pageSize });
    const state = subscriptionState(subscription, res.attempts[0], end);
    if (!state) throw missing;
    const attempts = res.attempts.map(attemptJson);
    const head = `subscription ${id} (${state.state})${state.reason ? `: ${state.reason}` : ""}`;
    const lines = attempts.map(
      (a) =>
        `${a.attempted_at}  delivery ${a.delivery_id} attempt ${a.attempt}  ${a.outcome}  ${a.error ?? a.status_code ?? ""}` +
        `${a.next_retry_at ? `  next retry ${a.next_retry_at}` : ""}`,
    );
    return {
      json: { subscription_id: Number(id), state: state.state, reason: state.reason, attempts },
      text: [head, ...lines].join("\n"),
    };
  },

  async "deliveries retry"({ deliveries }, values) {
    const res = await deliveries.retryDelivery({
      owner: ownerOf(values),
      subscriptionId: idOf(values, "subscription"),
      deliveryId: idOf(values, "id"),
    });
    const json = deliveryJson(res.delivery!);
    return { json, text: `delivery ${json.id} ${json.status}, next attempt ${json.next_retry_at ?? "none"}` };
  },

  async "deliveries recover"({ deliveries }, values, [given]) {
    const id = subscriptionId("SUBSCRIPTION_ID", given!);
    const since = values.since as string;
    if (!RFC3339.safeParse(since).success)
      throw new UsageError(
        `--since: expected an RFC 3339 date-time, such as 2026-01-15T09:00:00Z, not ${JSON.stringify(since.slice(0, 40))}`,
      );
    const at = new Date(since);
    const res = await deliveries.recoverDeliveries({
      owner: ownerOf(values),
      subscriptionId: id,
      since: timestampFromDate(at),
    });
    const json: RecoveredJson = { subscription_id: Number(id), since: at.toISOString(), queued: res.queuedCount };
    const what = json.queued === 1 ? "1 delivery" : `${json.queued} deliveries`;
    return { json, text: `subscription ${json.subscription_id}: ${what} since ${json.since} queued, oldest first` };
  },
};
