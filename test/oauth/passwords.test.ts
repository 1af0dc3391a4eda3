// Member passwords: scrypt at OWASP's minimum (N=2^17, r=8, p=1); an older,
// weaker hash still logs in and is replaced by a current one at that login;
// the dummy hash for unknown emails exists as soon as the organisation app does.
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import {
  MAX_WAITING_DERIVATIONS,
  PasswordQueueFullError,
  dummyHash,
  hashPassword,
  needsRehash,
  SCRYPT_COST,
  verifyPassword,
} from "../../services/organisation/members/password.js";
import { startPlatform, type OrganisationApp, type Platform, type StartedService } from "../support/platform.js";

let platform: Platform;
let svc: StartedService<OrganisationApp>;
let client: ReturnType<typeof svc.client<typeof OrganisationService>>;

beforeAll(async () => {
  platform = await startPlatform({ token: "p".repeat(40) });
  svc = platform.organisation;
  client = svc.client(OrganisationService);
});

afterAll(async () => {
  await platform?.stop();
});

/** True when the promise has already settled (its reaction runs before one queued after it). */
async function isSettled(promise: Promise<unknown>): Promise<boolean> {
  const pending = Symbol("pending");
  return (await Promise.race([promise, Promise.resolve(pending)])) !== pending;
}

const costOf = (encoded: string) => {
  const [scheme, N, r, p] = encoded.split("$");
  return { scheme, N: Number(N), r: Number(r), p: Number(p) };
};

async function storedHash(email: string): Promise<string> {
  const rows: { password_hash: string }[] = await svc.app.orm.em
    .fork()
    .execute(`select "password_hash" from "organisation"."member" where "email" = ?`, [email]);
  expect(rows.length).toBe(1);
  return rows[0]!.password_hash;
}

async function setStoredHash(email: string, hash: string): Promise<void> {
  await svc.app.orm.em
    .fork()
    .execute(`update "organisation"."member" set "password_hash" = ? where "email" = ?`, [hash, email]);
}

describe("the dummy hash for unknown emails", () => {
  it("is made when the organisation app is created, before any login", async () => {
    // Nothing in this file has logged in yet: only the app can have made it.
    expect(await isSettled(dummyHash())).toBe(true);
  });
});

describe("hashes", () => {
  it("are scrypt with N=2^14, r=8, p=5 (OWASP's 16 MiB alternative to N=2^17, p=1), a salt each, and verify only the right password", async () => {
    const hash = await hashPassword("correct horse");
    expect(costOf(hash)).toEqual({ scheme: "scrypt", N: 2 ** 14, r: 8, p: 5 });
    expect(SCRYPT_COST).toEqual({ N: 2 ** 14, r: 8, p: 5 });
    expect(await hashPassword("correct horse")).not.toBe(hash);
    expect(await verifyPassword("correct horse", hash)).toBe(true);
    expect(await verifyPassword("correct horsE", hash)).toBe(false);
    expect(needsRehash(hash)).toBe(false);
  });

  it("made with weaker parameters still verify, and ask for a rehash", async () => {
    const old = await hashPassword("correct horse", { N: 2 ** 15, r: 8, p: 1 });
    expect(costOf(old).N).toBe(2 ** 15);
    expect(await verifyPassword("correct horse", old)).toBe(true);
    expect(needsRehash(old)).toBe(true);
    expect(needsRehash(await hashPassword("x", { N: 2 ** 17, r: 4, p: 1 }))).toBe(true);
  });

  it("made with the earlier N=2^17, r=8, p=1 (128 MiB) still verify, and ask for a rehash to today's 16 MiB", async () => {
    const earlier = await hashPassword("correct horse", { N: 2 ** 17, r: 8, p: 1 });
    expect(await verifyPassword("correct horse", earlier)).toBe(true);
    expect(await verifyPassword("correct horsE", earlier)).toBe(false);
    expect(needsRehash(earlier)).toBe(true);
  });

  it("never match when malformed or asking for more than a stored hash may", async () => {
    const good = await hashPassword("pw-pw-pw-pw");
    const [, , , , salt, key] = good.split("$");
    for (const bad of [
      "",
      "plain",
      `bcrypt$131072$8$1$${salt}$${key}`,
      `scrypt$131072$8$1$${salt}`,
      `scrypt$131072$8$1$$${key}`,
      `scrypt$131071$8$1$${salt}$${key}`, // N not a power of two
      `scrypt$${2 ** 24}$8$1$${salt}$${key}`, // 2 GiB: refused, not attempted
      `scrypt$131072$0$1$${salt}$${key}`,
      `scrypt$131072$8$99$${salt}$${key}`,
      `scrypt$${2 ** 20}$32$16$${salt}$${key}`, // each bound on its own, together ~4 GiB: refused
      `scrypt$${2 ** 19}$8$1$${salt}$${key}`, // 512 MiB, four times today's: refused
      `${good}$extra`,
    ]) {
      expect(await verifyPassword("pw-pw-pw-pw", bad), bad).toBe(false);
      expect(needsRehash(bad)).toBe(false);
    }
  });
});

describe("the queue of derivations", () => {
  const cheap = { N: 2 ** 10, r: 8, p: 1 };

  it("is bounded: past MAX_WAITING_DERIVATIONS waiting, a hash is refused at once, not queued", async () => {
    // Two run at once; MAX_WAITING_DERIVATIONS more wait; the four after them are refused.
    const total = 2 + MAX_WAITING_DERIVATIONS + 4;
    const results = await Promise.allSettled(
      Array.from({ length: total }, (_, i) => hashPassword(`pw-${i}-pw-pw`, cheap)),
    );
    const refused = results.filter((r) => r.status === "rejected");
    expect(refused).toHaveLength(4);
    for (const r of refused) expect((r as PromiseRejectedResult).reason).toBeInstanceOf(PasswordQueueFullError);
    expect(
      results.slice(-4).every((r) => r.status === "rejected"),
      "the last four are the refused ones",
    ).toBe(true);
  });

  it("skips the work of a caller that gave up while it waited", async () => {
    const gaveUp = new AbortController();
    const ahead = [hashPassword("pw-a-pw-pw", cheap), hashPassword("pw-b-pw-pw", cheap)];
    const waiting = expect(hashPassword("pw-c-pw-pw", cheap, gaveUp.signal)).rejects.toThrow("deadline passed");
    gaveUp.abort(new Error("deadline passed"));
    await Promise.all(ahead);
    await waiting;
  });
});

describe("memory", () => {
  it("at most two derivations run at once: six concurrent N=2^17 derivations never hold three times 128 MiB", async () => {
    // Each N=2^17, r=8 derivation (a hash made before today's parameters, as
    // a login verifies it) holds 128 MiB on one of libuv's four pool
    // threads while it runs; without the limit four would run together.
    const base = process.memoryUsage().rss;
    let peak = base;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 2);
    try {
      await Promise.all(Array.from({ length: 6 }, (_, i) => hashPassword(`password-${i}`, { N: 2 ** 17, r: 8, p: 1 })));
    } finally {
      clearInterval(sampler);
    }
    const MiB = 2 ** 20;
    // Seen at all: the sampling does catch a derivation's memory.
    expect(peak - base).toBeGreaterThan(100 * MiB);
    expect(peak - base).toBeLessThan(3 * 128 * MiB);
  });
});

describe("VerifyMemberCredentials upgrades an older hash", () => {
  it("a member stored with N=2^15 logs in, and afterwards has a hash with today's parameters that still verifies; a wrong password upgrades nothing", async () => {
    const email = "legacy@passwords.test";
    const password = "an old password";
    const { owner } = await client.createOrganisation({ name: "Legacy", ownerEmail: email, ownerPassword: password });
    const old = await hashPassword(password, { N: 2 ** 15, r: 8, p: 1 });
    await setStoredHash(email, old);

    const wrong = await client.verifyMemberCredentials({ email, password: "not the password" }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(wrong).toBeInstanceOf(ConnectError);
    // "email or password is wrong": a member's failure, never Unauthenticated (the internal credential's code).
    expect(wrong!.code).toBe(Code.PermissionDenied);
    expect(await storedHash(email)).toBe(old);

    const ok = await client.verifyMemberCredentials({ email, password });
    expect(ok.member?.id).toBe(owner!.id);
    const upgraded = await storedHash(email);
    expect(upgraded).not.toBe(old);
    expect(costOf(upgraded)).toEqual({ scheme: "scrypt", N: 2 ** 14, r: 8, p: 5 });
    expect(await verifyPassword(password, upgraded)).toBe(true);
    expect(await verifyPassword("not the password", upgraded)).toBe(false);

    // A current hash is left as it is.
    expect((await client.verifyMemberCredentials({ email, password })).member?.id).toBe(owner!.id);
    expect(await storedHash(email)).toBe(upgraded);
  });
});
