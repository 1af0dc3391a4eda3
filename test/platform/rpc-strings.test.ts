// Strings no service can store: U+0000 (PostgreSQL's text refuses it) and a
// lone surrogate (no UTF-8 form). Every RPC refuses them with InvalidArgument
// before a handler runs, in any string field: top level, nested, repeated.
import { Code, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { createRpcClient, serveInProcess } from "../../services/shared/rpc/client.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { rpcError } from "../support/rpc.js";

const TOKEN = "s".repeat(40);
let platform: Platform;
let orgId: string;

beforeAll(async () => {
  platform = await startPlatform({
    token: TOKEN,
    auth: true,
    member: { organisation: "Strings", email: "owner@strings.test", password: "password-s" },
  });
  orgId = platform.organisationId;
});

afterAll(async () => {
  await platform?.stop();
});

/** A stock client (no guard of its own), so that what is tested is the server's refusal. */
function stock(baseUrl: string, useBinaryFormat: boolean) {
  const credential: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${TOKEN}`);
    return next(req);
  };
  const transport = createConnectTransport({
    baseUrl,
    httpVersion: "1.1",
    useBinaryFormat,
    interceptors: [credential],
  });
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
      const org = createClient(OrganisationService, stock(platform.organisation.server.url, binary));
      await refused(
        org.createOrganisation({ name: "Nul\u0000Org", ownerEmail: "nul@strings.test", ownerPassword: "password-n" }),
        "name",
      );
      await refused(org.getOrganisation({ id: "\u0000" }), "id");
      await refused(
        org.verifyMemberCredentials({ email: "owner@strings.test\u0000", password: "password-s" }),
        "email",
      );
      const a = createClient(AuthService, stock(platform.auth.server.url, binary));
      await refused(a.getInteraction({ interactionId: "int\u0000" }), "interaction_id");
    });

    it("is refused in a nested message", async () => {
      const a = createClient(AuthService, stock(platform.auth.server.url, binary));
      await refused(
        a.exchangeToken({
          grantType: "client_credentials",
          client: { clientId: "bc_\u0000", clientSecret: "x" },
          remoteAddress: "127.0.0.1",
        }),
        "client.client_id",
      );
    });

    it("is refused in a repeated field", async () => {
      const a = createClient(AuthService, stock(platform.auth.server.url, binary));
      await refused(
        a.createClient({
          name: "Nul",
          redirectUris: ["https://ok.test/cb", "https://nul.test/\u0000"],
          ownerOrganisationId: orgId,
        }),
        "redirect_uris[1]",
      );
    });

    it("leaves clean strings alone", async () => {
      const org = createClient(OrganisationService, stock(platform.organisation.server.url, binary));
      expect((await org.getOrganisation({ id: orgId })).organisation?.name).toBe("Strings");
    });
  });
}

describe("the project's client", () => {
  it("refuses a lone surrogate (which the encoding would turn into U+FFFD) and U+0000, over HTTP and in memory", async () => {
    const org = createRpcClient(OrganisationService, {
      baseUrl: platform.organisation.server.url,
      timeoutMs: 5000,
      internalToken: TOKEN,
    });
    const lone = ["Half\uD800", "\uDC00Half"];
    for (const name of lone) {
      await refused(
        org.createOrganisation({
          name,
          ownerEmail: `lone-${lone.indexOf(name)}@strings.test`,
          ownerPassword: "password-l",
        }),
        "name",
      );
    }
    const undo = serveInProcess(platform.organisation.server.url, platform.organisation.server.inProcess);
    try {
      await refused(
        org.createOrganisation({
          name: "Half\uD800",
          ownerEmail: "lone-mem@strings.test",
          ownerPassword: "password-l",
        }),
        "name",
      );
      await refused(org.getOrganisation({ id: "\u0000" }), "id");
      // A pair is a character, not a lone half.
      const ok = await org.createOrganisation({
        name: "Pair \uD83D\uDE00",
        ownerEmail: "pair@strings.test",
        ownerPassword: "password-p",
      });
      expect((await org.getOrganisation({ id: ok.organisation!.id })).organisation?.name).toBe("Pair \uD83D\uDE00");
    } finally {
      undo();
    }
  });
});
