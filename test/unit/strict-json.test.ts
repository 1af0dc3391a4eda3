// The strict JSON rules alone (services/shared/strict-json.ts), as the
// gateway applies them to request bodies and the auth service to client
// metadata documents: UTF-8 only, no name twice in one object, no U+0000 or
// unpaired surrogate in any name or string. Through the gateway:
// gateway-string-params.test.ts, subscriptions-api-access.test.ts; through a
// metadata document: oauth-client-metadata-refusals.test.ts.
import { describe, expect, it } from "vitest";
import {
  decodeUtf8,
  firstRepeatedName,
  firstUnstorableString,
  strictJsonProblem,
} from "../../services/shared/strict-json.js";

describe("decodeUtf8", () => {
  it("decodes UTF-8, keeps a byte order mark, and refuses what is not UTF-8 instead of writing U+FFFD", () => {
    expect(decodeUtf8(Buffer.from('{"name":"Zoë 東京 \u{1f4c7}"}'))).toBe('{"name":"Zoë 東京 \u{1f4c7}"}');
    expect(decodeUtf8(Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]))).toBe("\ufeff{}");
    for (const bytes of [[0xff], [0x43, 0x61, 0x66, 0xe9], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xe2, 0x82]]) {
      expect(decodeUtf8(Buffer.from(bytes)), bytes.join(" ")).toBeUndefined();
    }
  });
});

describe("firstRepeatedName", () => {
  it("finds a name twice in one object, at any depth, escaped or not", () => {
    expect(firstRepeatedName('{"a":1,"a":2}')).toBe("a");
    expect(firstRepeatedName('{"a":1,"\\u0061":2}')).toBe("a");
    expect(firstRepeatedName('{"x":[{"b":1,"c":{"d":1,"d":2}}]}')).toBe("d");
    expect(firstRepeatedName('{"x":"\\"a\\"","a":1,"x":2}')).toBe("x");
  });

  it("the same name in different objects, or as a string value, is no repetition", () => {
    expect(firstRepeatedName('{"a":{"a":1},"b":[{"a":1},{"a":2}],"c":"a"}')).toBeUndefined();
    expect(firstRepeatedName('["a","a"]')).toBeUndefined();
  });
});

describe("firstUnstorableString", () => {
  it("names the top-level member an unstorable string is in, or is the name of", () => {
    expect(firstUnstorableString(JSON.parse('{"a":"ok","b":["x","\\ud800"]}'))).toEqual({
      text: "\ud800",
      member: "b",
      isMemberName: false,
    });
    expect(firstUnstorableString(JSON.parse('{"a":{"\\u0000":1}}'))).toEqual({
      text: "\u0000",
      member: "a",
      isMemberName: false,
    });
    expect(firstUnstorableString(JSON.parse('{"\\udc00":1}'))).toEqual({
      text: "\udc00",
      member: "\udc00",
      isMemberName: true,
    });
    expect(firstUnstorableString("\ud800")).toEqual({ text: "\ud800", isMemberName: false });
    expect(firstUnstorableString(JSON.parse('{"a":"card \\ud83d\\udcc7","b":[1,null,true]}'))).toBeUndefined();
  });
});

describe("strictJsonProblem", () => {
  it("a repeated name first, then an unstorable string; none for JSON that keeps both rules", () => {
    const problem = (text: string) => strictJsonProblem(text, JSON.parse(text));
    expect(problem('{"a":"\\ud800","a":1}')).toEqual({ kind: "repeated-name", name: "a" });
    expect(problem('{"a":"\\ud800"}')).toEqual({
      kind: "unstorable",
      text: "\ud800",
      member: "a",
      isMemberName: false,
    });
    expect(problem('{"a":[1,2],"b":{"a":3}}')).toBeUndefined();
  });
});
