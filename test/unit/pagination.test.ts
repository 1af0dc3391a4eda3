// Page sizes and page tokens alone, without a database: what a token names,
// that the next page starts after it, and that a token this service did not
// issue is INVALID_ARGUMENT. (Paging through real rows: pagination.test.ts.)
import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  int64IdKeyset,
  pageSize,
  PAGE_SIZE_DEFAULT,
  PAGE_SIZE_MAX,
  timeIdKeyset,
} from "../../services/shared/pagination.js";

const token = (parts: unknown[]) => Buffer.from(JSON.stringify(parts)).toString("base64url");

/** The message of the INVALID_ARGUMENT `fn` throws. */
function invalidArgument(fn: () => unknown): string {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(ConnectError);
  expect((caught as ConnectError).code).toBe(Code.InvalidArgument);
  return (caught as ConnectError).rawMessage;
}

describe("page_size", () => {
  it("0 is the default; 1 to the maximum are taken as they are", () => {
    expect(pageSize(0)).toBe(PAGE_SIZE_DEFAULT);
    expect(pageSize(1)).toBe(1);
    expect(pageSize(PAGE_SIZE_MAX)).toBe(PAGE_SIZE_MAX);
    expect(pageSize(0, 20, 30)).toBe(20);
  });

  it.each([-1, PAGE_SIZE_MAX + 1, 1.5, Number.NaN])("refuses %s", (size) => {
    expect(invalidArgument(() => pageSize(size))).toBe(`page_size: expected 1 to ${PAGE_SIZE_MAX}`);
  });
});

describe("page tokens of (time desc, id desc)", () => {
  type Row = { id: string; createdAt: Date };
  const keyset = timeIdKeyset<Row>("createdAt");

  it("an empty token is the first page: no filter", () => {
    expect(keyset.after("")).toEqual({});
  });

  it("the token after a row resumes strictly after it in the order (time, then id)", () => {
    const id = randomUUID().toUpperCase();
    const at = new Date("2026-11-23T10:00:00.123Z");
    const next = keyset.tokenAfter({ id, createdAt: at });
    expect(next).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(keyset.after(next)).toEqual({
      $or: [{ createdAt: { $lt: at } }, { createdAt: at, id: { $lt: id.toLowerCase() } }],
    });
    expect(keyset.orderBy).toEqual({ createdAt: "desc", id: "desc" });
  });

  it("refuses a token it did not issue", () => {
    for (const bad of [
      "garbage",
      token([]),
      token(["2026-01-01T00:00:00.000Z"]),
      token(["not a time", randomUUID()]),
      token(["2026-01-01T00:00:00.000Z", "x"]),
      token([1, randomUUID()]),
    ]) {
      expect(
        invalidArgument(() => keyset.after(bad)),
        bad,
      ).toBe("page_token: not a token this service issued");
    }
  });
});

describe("page tokens of (int64 id desc)", () => {
  const keyset = int64IdKeyset<{ id: bigint }>();

  it("the token after a row resumes below its id, up to the largest int64", () => {
    for (const id of [1n, 42n, 2n ** 63n - 1n]) {
      expect(keyset.after(keyset.tokenAfter({ id }))).toEqual({ id: { $lt: id } });
    }
    expect(keyset.after("")).toEqual({});
    expect(keyset.orderBy).toEqual({ id: "desc" });
  });

  it("refuses a token it did not issue", () => {
    for (const bad of [
      "garbage",
      token(["0"]),
      token([1]),
      token(["-1"]),
      token(["9223372036854775808"]),
      token(["01"]),
      token(["1", "2"]),
    ]) {
      expect(
        invalidArgument(() => keyset.after(bad)),
        bad,
      ).toBe("page_token: not a token this service issued");
    }
  });
});
