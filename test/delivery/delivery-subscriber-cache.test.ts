// The delivery workers keep the subscribers they read (target, secrets) for
// their next POSTs (services/delivery/worker/subscriber-cache.ts), with a TTL
// here far longer than the test: so what keeps them fresh is the webhook
// service's subscriptions.changed announcement on the bus (NATS core), heard
// before the change's answer reaches the client. As the owner sees it over
// REST: after a PUT of target_url the next event goes to the new target only;
// after rotate-secret the next POST verifies with the new secret (and the
// old one, during the overlap). Real services on PostgreSQL and NATS, a local receiver.
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { apiCaller, type AppClient } from "../support/api-client.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { waitFor } from "../support/processes.js";
import { startReceiver, type Received, type Receiver } from "../support/receiver.js";

const PATH = "/oauth/webhooks/subscriptions";

let platform: Platform;
let receiver: Receiver;
let call: ReturnType<typeof apiCaller>["call"];
let app: AppClient;
let createContact: (firstName: string) => Promise<unknown>;

beforeAll(async () => {
  receiver = await startReceiver();
  platform = await startPlatform({
    token: "k".repeat(40),
    config: {
      WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
      DELIVERY_POLL_MS: "50",
      // Five minutes, the most allowed: an entry outlives the test, only an announcement drops it.
      DELIVERY_SUBSCRIBER_CACHE_MS: "300000",
    },
    auth: true,
    webhook: true,
    delivery: true,
    gateway: { publicUrlPort: true, bus: true, serviceUrls: {} },
  });
  const orgs = platform.organisation.client(OrganisationService);
  const orgId = (
    await orgs.createOrganisation({
      name: "Cached Cards",
      ownerEmail: "owner@cached.test",
      ownerPassword: "password-k",
    })
  ).organisation!.id;
  const res = await platform.auth
    .client(AuthService)
    .createClient({ name: "Zap", ownerOrganisationId: orgId, scopes: [] });
  app = { id: res.client!.clientId, secret: res.clientSecret };
  call = apiCaller(() => platform.base).call;
  createContact = (firstName) => orgs.createContact({ organisationId: orgId, fields: { firstName } });
}, 90_000);

afterAll(async () => {
  await platform?.stop();
  await receiver?.close();
});

const nameOf = (r: Received) => (JSON.parse(r.body) as { data: { first_name: string } }).data.first_name;

/** Creates a contact and waits for its POST at `route`. */
async function arrives(route: { requests: Received[] }, firstName: string): Promise<Received> {
  await createContact(firstName);
  return waitFor(() => route.requests.find((r) => nameOf(r) === firstName), 15_000, `${firstName}'s POST`);
}

it("a PUT of target_url and a rotated secret reach the workers at once, whatever their cache TTL; after a DELETE nothing more arrives", async () => {
  const old = receiver.route("/cache/old");
  const created = await call(app, "POST", PATH, { target_url: old.url, event_type: "contact.created" });
  expect(created.status).toBe(201);
  const { id, secret } = (await created.json()) as { id: number; secret: string };
  // A second subscription to the same events, made before anything is cached: each event's POSTs to both go out
  // together, so its POSTs show when the first's would have arrived.
  const witness = receiver.route("/cache/witness");
  expect((await call(app, "POST", PATH, { target_url: witness.url, event_type: "contact.created" })).status).toBe(201);
  // The worker reads the subscriber for these, and keeps it.
  for (const name of ["Ada", "Bea", "Cy"]) await arrives(old, name);

  const fresh = receiver.route("/cache/new");
  const put = await call(app, "PUT", `${PATH}/${id}`, { target_url: fresh.url });
  expect(put.status).toBe(200);
  const moved = await arrives(fresh, "Dora");
  expect(new Webhook(secret).verify(moved.body, moved.headers as Record<string, string>)).toBeTruthy();
  expect(old.requests.map(nameOf)).toEqual(["Ada", "Bea", "Cy"]);

  const rotated = await call(app, "POST", `${PATH}/${id}/rotate-secret`);
  expect(rotated.status).toBe(200);
  const { secret: next } = (await rotated.json()) as { secret: string };
  const signed = await arrives(fresh, "Eve");
  // Both signatures during the overlap: the new secret verifies it.
  expect(String(signed.headers["webhook-signature"]).split(" ")).toHaveLength(2);
  expect(new Webhook(next).verify(signed.body, signed.headers as Record<string, string>)).toBeTruthy();

  // Deleted: nothing more arrives.
  const deleted = await call(app, "DELETE", `${PATH}/${id}`);
  expect(deleted.status).toBe(204);
  // Fay's POST reaches the witness, and then the next event's: by then one to the deleted subscription would have too.
  await arrives(witness, "Fay");
  await arrives(witness, "Gus");
  expect(fresh.requests.map(nameOf)).toEqual(["Dora", "Eve"]);
});
