// The organisation service over real RPC: organisations, members and their
// credentials check, contacts, and the events every contact change emits.
import { fromBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContactEventSchema, EventType, type ContactEvent } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { startPlatform, type OrganisationApp, type Platform, type StartedService } from "../support/platform.js";
import { rpcError } from "../support/rpc.js";

const TOKEN = "t".repeat(40);
let platform: Platform;
let svc: StartedService<OrganisationApp>;
let client: ReturnType<typeof svc.client<typeof OrganisationService>>;
const received: ContactEvent[] = [];

beforeAll(async () => {
  platform = await startPlatform({ token: TOKEN });
  svc = platform.organisation;
  await platform.bus.consume({ durable: "organisation-test", subject: "contact.>" }, async (m) => {
    received.push(fromBinary(ContactEventSchema, m.data));
  });
  client = svc.client(OrganisationService);
});

afterAll(async () => {
  await platform?.stop();
});

async function eventually<T>(fn: () => T | undefined, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("organisations and members", () => {
  it("creates an organisation with its owner and reads it back", async () => {
    const res = await client.createOrganisation({
      name: "  Acme Cards ",
      ownerEmail: "Owner@Acme.test",
      ownerPassword: "correct horse",
    });
    expect(res.organisation?.name).toBe("Acme Cards");
    expect(res.owner?.email).toBe("owner@acme.test");
    expect(res.owner?.organisationId).toBe(res.organisation?.id);
    const got = await client.getOrganisation({ id: res.organisation!.id });
    expect(got.organisation?.name).toBe("Acme Cards");
  });

  it("refuses a second member with the same email, whatever its case", async () => {
    await client.createOrganisation({ name: "One", ownerEmail: "dup@x.test", ownerPassword: "password-1" });
    const err = await rpcError(
      client.createOrganisation({ name: "Two", ownerEmail: "DUP@x.test", ownerPassword: "password-2" }),
    );
    expect(err.code).toBe(Code.AlreadyExists);
  });

  it("names the bad field", async () => {
    expect(
      (await rpcError(client.createOrganisation({ name: "", ownerEmail: "a@b.test", ownerPassword: "password" })))
        .rawMessage,
    ).toBe("name: required");
    expect(
      (await rpcError(client.createOrganisation({ name: "N", ownerEmail: "nope", ownerPassword: "password" }))).code,
    ).toBe(Code.InvalidArgument);
    const short = await rpcError(
      client.createOrganisation({ name: "N", ownerEmail: "c@d.test", ownerPassword: "short" }),
    );
    expect(short.code).toBe(Code.InvalidArgument);
    expect(short.rawMessage).toMatch(/^password:/);
    expect((await rpcError(client.getOrganisation({ id: "not-a-uuid" }))).code).toBe(Code.NotFound);
  });

  it("checks credentials without telling an unknown email from a wrong password", async () => {
    const { owner } = await client.createOrganisation({
      name: "Cred",
      ownerEmail: "cred@x.test",
      ownerPassword: "s3cret-pass",
    });
    const ok = await client.verifyMemberCredentials({ email: "CRED@x.test", password: "s3cret-pass" });
    expect(ok.member?.id).toBe(owner?.id);
    const wrong = await rpcError(client.verifyMemberCredentials({ email: "cred@x.test", password: "s3cret-pasS" }));
    const unknown = await rpcError(client.verifyMemberCredentials({ email: "nobody@x.test", password: "s3cret-pass" }));
    // PERMISSION_DENIED, not UNAUTHENTICATED: that code is kept for a refused internal credential.
    expect(Code[wrong.code]).toBe(Code[Code.PermissionDenied]);
    expect(Code[unknown.code]).toBe(Code[Code.PermissionDenied]);
    expect(wrong.rawMessage).toBe("email or password is wrong");
    expect(wrong.rawMessage).toBe(unknown.rawMessage);
  });

  it("adds members to an existing organisation only", async () => {
    const { organisation } = await client.createOrganisation({
      name: "Team",
      ownerEmail: "lead@team.test",
      ownerPassword: "password-x",
    });
    const { member } = await client.createMember({
      organisationId: organisation!.id,
      email: "second@team.test",
      password: "password-y",
    });
    expect(member?.organisationId).toBe(organisation!.id);
    const missing = await rpcError(
      client.createMember({
        organisationId: "00000000-0000-4000-8000-000000000000",
        email: "x@team.test",
        password: "password-y",
      }),
    );
    expect(missing.code).toBe(Code.NotFound);
  });
});

describe("contacts", () => {
  let orgId: string;
  beforeAll(async () => {
    const res = await client.createOrganisation({
      name: "Contacts Inc",
      ownerEmail: "c-owner@x.test",
      ownerPassword: "password-c",
    });
    orgId = res.organisation!.id;
  });

  it("create and update each emit exactly one event with the contact as it is", async () => {
    const { contact } = await client.createContact({
      organisationId: orgId,
      fields: { firstName: "Ada", lastName: "Lovelace", email: "ada@example.com", company: "Engines" },
    });
    expect(contact?.firstName).toBe("Ada");
    const updated = await client.updateContact({
      id: contact!.id,
      organisationId: orgId,
      fields: { jobTitle: "Analyst", company: "" },
    });
    expect(updated.contact?.jobTitle).toBe("Analyst");
    expect(updated.contact?.company).toBe("");
    expect(updated.contact?.email).toBe("ada@example.com");

    const mine = () => received.filter((e) => e.contact?.id === contact!.id);
    await eventually(() => (mine().length >= 2 ? true : undefined));
    // Nothing more arrives: events are relayed and delivered in commit order, so once the event
    // of a change made after these two is here, every event of these two is here too.
    const { contact: marker } = await client.createContact({ organisationId: orgId, fields: { firstName: "Marker" } });
    await eventually(() => (received.some((e) => e.contact?.id === marker!.id) ? true : undefined));
    const events = mine();
    expect(events.map((e) => e.type)).toEqual([EventType.CONTACT_CREATED, EventType.CONTACT_UPDATED]);
    expect(events[0]!.organisationId).toBe(orgId);
    expect(events[0]!.contact?.company).toBe("Engines");
    expect(events[1]!.contact?.jobTitle).toBe("Analyst");
    expect(events[1]!.contact?.company).toBe("");
    expect(new Set(events.map((e) => e.eventId)).size).toBe(2);
    expect(await svc.app.relay.backlog()).toBe(0);
  });

  it("refuses bad input and writes nothing", async () => {
    const before = (await client.listContacts({ organisationId: orgId, pageSize: 100 })).contacts.length;
    const noName = await rpcError(client.createContact({ organisationId: orgId, fields: { email: "x@y.test" } }));
    expect(noName.code).toBe(Code.InvalidArgument);
    const badEmail = await rpcError(
      client.createContact({ organisationId: orgId, fields: { firstName: "B", email: "nope" } }),
    );
    expect(badEmail.rawMessage).toBe("email: expected an email address");
    const badSite = await rpcError(
      client.createContact({ organisationId: orgId, fields: { firstName: "B", website: "javascript:alert(1)" } }),
    );
    expect(badSite.rawMessage).toMatch(/^website:/);
    const noOrg = await rpcError(
      client.createContact({ organisationId: "00000000-0000-4000-8000-000000000001", fields: { firstName: "B" } }),
    );
    expect(noOrg.code).toBe(Code.NotFound);
    expect((await client.listContacts({ organisationId: orgId, pageSize: 100 })).contacts.length).toBe(before);
  });

  it("keeps a contact inside its organisation", async () => {
    const other = await client.createOrganisation({
      name: "Other",
      ownerEmail: "o@other.test",
      ownerPassword: "password-o",
    });
    const { contact } = await client.createContact({ organisationId: orgId, fields: { lastName: "Hidden" } });
    const err = await rpcError(client.getContact({ id: contact!.id, organisationId: other.organisation!.id }));
    expect(err.code).toBe(Code.NotFound);
    const upd = await rpcError(
      client.updateContact({ id: contact!.id, organisationId: other.organisation!.id, fields: { notes: "x" } }),
    );
    expect(upd.code).toBe(Code.NotFound);
  });

  it("lists newest first and pages with a token", async () => {
    const { organisation } = await client.createOrganisation({
      name: "Pager",
      ownerEmail: "p@pager.test",
      ownerPassword: "password-p",
    });
    for (let i = 0; i < 5; i++)
      await client.createContact({ organisationId: organisation!.id, fields: { firstName: `P${i}` } });
    const first = await client.listContacts({ organisationId: organisation!.id, pageSize: 2 });
    expect(first.contacts.map((c) => c.firstName)).toEqual(["P4", "P3"]);
    const second = await client.listContacts({
      organisationId: organisation!.id,
      pageSize: 2,
      pageToken: first.nextPageToken,
    });
    expect(second.contacts.map((c) => c.firstName)).toEqual(["P2", "P1"]);
    const third = await client.listContacts({
      organisationId: organisation!.id,
      pageSize: 2,
      pageToken: second.nextPageToken,
    });
    expect(third.contacts.map((c) => c.firstName)).toEqual(["P0"]);
    expect(third.nextPageToken).toBe("");
    expect((await rpcError(client.listContacts({ organisationId: organisation!.id, pageSize: 101 }))).code).toBe(
      Code.InvalidArgument,
    );
    for (const forged of [
      ["garbage", "x"],
      [new Date().toISOString(), "not-a-uuid"],
      [1, 2],
    ].map((p) => Buffer.from(JSON.stringify(p)).toString("base64url"))) {
      const err = await rpcError(client.listContacts({ organisationId: organisation!.id, pageToken: forged }));
      expect(err.code).toBe(Code.InvalidArgument);
      expect(err.rawMessage).toBe("page_token: not a token this service issued");
    }
  });
});

describe("internal credential", () => {
  it("refuses calls without it", async () => {
    const anonymous = svc.client(OrganisationService, "");
    const err = await rpcError(anonymous.getOrganisation({ id: "00000000-0000-4000-8000-000000000000" }));
    expect(err.code).toBe(Code.Unauthenticated);
    const wrong = svc.client(OrganisationService, "w".repeat(40));
    expect((await rpcError(wrong.getOrganisation({ id: "x" }))).code).toBe(Code.Unauthenticated);
  });
});
