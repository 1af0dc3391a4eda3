// UUIDv7 ids (services/shared/time-ordered-id.ts): version 7 and the RFC 4122
// variant, the ms they were made in, distinct, and in the order they were
// made, also many within one ms and across the random pool's refills.
import { describe, expect, it } from "vitest";
import { timeOrderedId } from "../../services/shared/time-ordered-id.js";

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const msOf = (id: string) => parseInt(id.replaceAll("-", "").slice(0, 12), 16);

describe("timeOrderedId", () => {
  it("makes version 7 ids of the current ms", () => {
    const before = Date.now();
    const id = timeOrderedId();
    const after = Date.now();
    expect(id).toMatch(UUID_V7);
    // Made in [before, after], or a ms ahead when an earlier call's counter ran over.
    expect(msOf(id)).toBeGreaterThanOrEqual(before);
    expect(msOf(id)).toBeLessThanOrEqual(after + 1);
  });

  it("sorts in the order the ids were made, each one new, across many refills of the random pool", () => {
    // 16 random bytes an id: 256 ids a pool, so 20,000 ids are 78 refills; many share a ms.
    const ids = Array.from({ length: 20_000 }, () => timeOrderedId());
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(UUID_V7);
    expect([...ids].sort()).toEqual(ids);
    const perMs = new Map<number, number>();
    for (const id of ids) perMs.set(msOf(id), (perMs.get(msOf(id)) ?? 0) + 1);
    expect(Math.max(...perMs.values())).toBeGreaterThan(1);
  });

  it("keeps 42 random bits after the counter: two ids of one ms differ there too", () => {
    const [a, b] = [timeOrderedId(), timeOrderedId()];
    const tail = (id: string) => id.replaceAll("-", "").slice(20);
    expect(tail(a!)).not.toBe(tail(b!));
  });
});
