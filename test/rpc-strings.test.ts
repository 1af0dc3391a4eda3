// Strings no service can store: U+0000 (PostgreSQL's text refuses it) and a
// lone surrogate (no UTF-8 form). Every RPC refuses them with InvalidArgument
// before a handler runs, in any string field: top level, nested, repeated.
import { Code, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { createAuthApp } from "../services/auth/auth-app.js";
import { createOrganisationApp } from "../services/organisation/organisation-app.js";
import type { EventBus } from "../services/shared/event-bus/event-bus.js";
import { createRpcClient, serveInProcess } from "../services/shared/rpc/client.js";
import type { ServiceApp } from "../services/shared/service-app.js";
import { createTestDatabase, testConfig, type TestDatabase } from "./support/backends.js";
import { rpcError } from "./support/rpc.js";
import { openTestBus, startService, type StartedService } from "./support/services.js";

const TOKEN = "s".repeat(40);
let db: TestDatabase;
let bus: EventBus;
let organisation: StartedService<ServiceApp>;
let auth: StartedService<ServiceApp>;
let orgId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const base = testConfig({ INTERNAL_RPC_TOKEN: TOKEN });
  bus = await openTestBus(base);
  organisation = await startService(createOrganisationApp, { config: base, db, bus });
  const config = testConfig({
    INTERNAL_RPC_TOKEN: TOKEN,
    NATS_STREAM: base.NATS_STREAM,
    NATS_SUBJECT_PREFIX: base.NATS_SUBJECT_PREFIX,
    ORGANISATION_RPC_URL: organisation.server.url,
  });
  auth = await startService(createAuthApp, { config, db, bus });
  const res = await organisation.client(OrganisationService).createOrganisation({ name: "Strings", ownerEmail: "owner@strings.test", ownerPassword: "password-s" });
  orgId = res.organisation!.id;
});

afterAll(async () => {
  await auth?.stop();
  await organisation?.stop();
  await bus?.close();
  await db?.drop();
});

/** A stock client (no guard of its own), so that what is tested is the server's refusal. */
function stock(baseUrl: string, useBinaryFormat: boolean) {
  const credential: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${TOKEN}`);
    return next(req);
  };
  const transport = createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat, interceptors: [credential] });
  return transport;
}

const refused = async (p: Promise<unknown>, field: string) => {
  const err = await rpcError(p);
  expect(err.code).toBe(Code.InvalidArgument);
  expect(err.rawMessage).toBe(`${field}: must not contain control characters (U+0000) or a lone surrogate`);
};

for (const binary of [true, false]) {
  describe(`U+0000 sent by a stock client (${binary ? "binary" : "JSON"})`, () => {
    it("is refused in a top-level string", async () => {
      const org = createClient(OrganisationService, stock(organisation.server.url, binary));
      await refused(org.createOrganisation({ name: "Nul\u0000Org", ownerEmail: "nul@strings.test", ownerPassword: "password-n" }), "name");
      await refused(org.getOrganisation({ id: "\u0000" }), "id");
      await refused(org.verifyMemberCredentials({ email: "owner@strings.test\u0000", password: "password-s" }), "email");
      const a = createClient(AuthService, stock(auth.server.url, binary));
      await refused(a.getInteraction({ interactionId: "int\u0000" }), "interaction_id");
    });

    it("is refused in a nested message", async () => {
      const a = createClient(AuthService, stock(auth.server.url, binary));
      await refused(
        a.exchangeToken({ grantType: "client_credentials", client: { clientId: "bc_\u0000", clientSecret: "x" }, remoteAddress: "127.0.0.1" }),
        "client.client_id",
      );
    });

    it("is refused in a repeated field", async () => {
      const a = createClient(AuthService, stock(auth.server.url, binary));
      await refused(a.createClient({ name: "Nul", redirectUris: ["https://ok.test/cb", "https://nul.test/\u0000"], ownerOrganisationId: orgId }), "redirect_uris[1]");
    });

    it("leaves clean strings alone", async () => {
      const org = createClient(OrganisationService, stock(organisation.server.url, binary));
      expect((await org.getOrganisation({ id: orgId })).organisation?.name).toBe("Strings");
    });
  });
}

describe("the project's client", () => {
  it("refuses a lone surrogate (which the encoding would turn into U+FFFD) and U+0000, over HTTP and in memory", async () => {
    const org = createRpcClient(OrganisationService, { baseUrl: organisation.server.url, timeoutMs: 5000, internalToken: TOKEN });
    const lone = ["Half\uD800", "\uDC00Half"];
    for (const name of lone) {
      await refused(org.createOrganisation({ name, ownerEmail: `lone-${lone.indexOf(name)}@strings.test`, ownerPassword: "password-l" }), "name");
    }
    const undo = serveInProcess(organisation.server.url, organisation.server.inProcess);
    try {
      await refused(org.createOrganisation({ name: "Half\uD800", ownerEmail: "lone-mem@strings.test", ownerPassword: "password-l" }), "name");
      await refused(org.getOrganisation({ id: "\u0000" }), "id");
      // A pair is a character, not a lone half.
      const ok = await org.createOrganisation({ name: "Pair \uD83D\uDE00", ownerEmail: "pair@strings.test", ownerPassword: "password-p" });
      expect((await org.getOrganisation({ id: ok.organisation!.id })).organisation?.name).toBe("Pair \uD83D\uDE00");
    } finally {
      undo();
    }
  });
});
