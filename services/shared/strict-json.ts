// JSON read strictly, wherever it comes from outside (a request body at the
// gateway, a client metadata document the auth service fetches): UTF-8 only,
// never repaired; no member name twice in one object; no string that is not
// storable text (storable-text.ts). JSON.parse alone accepts all three.
import { isStorableText } from "./storable-text.js";

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * RFC 8259 §8.1: "JSON text exchanged between systems that are not part of a
 * closed ecosystem MUST be encoded using UTF-8". The text, or undefined when
 * not UTF-8; a byte order mark is kept, so JSON.parse refuses it.
 */
export function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * RFC 6749 §3.1: "Request and response parameters MUST NOT be included more
 * than once." The first name repeated within one object, at any depth. Runs
 * on text JSON.parse accepted, so a string after "{" or "," in an object is a name.
 */
export function firstRepeatedName(text: string): string | undefined {
  // One set of names per open object; undefined for an open array.
  const open: (Set<string> | undefined)[] = [];
  let expectingName = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      let end = i + 1;
      for (let d = text.charCodeAt(end); d !== 0x22; d = text.charCodeAt(end)) end += d === 0x5c /* \ */ ? 2 : 1;
      if (expectingName) {
        const raw = text.slice(i + 1, end);
        // "a\u0062" and "ab" are the same name.
        const name: string = raw.includes("\\") ? JSON.parse(text.slice(i, end + 1)) : raw;
        const names = open[open.length - 1]!;
        if (names.has(name)) return name;
        names.add(name);
        expectingName = false;
      }
      i = end;
    } else if (c === 0x7b /* { */) {
      open.push(new Set());
      expectingName = true;
    } else if (c === 0x5b /* [ */) {
      open.push(undefined);
      expectingName = false;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      open.pop();
      expectingName = false;
    } else if (c === 0x2c /* , */) {
      expectingName = open[open.length - 1] !== undefined;
    }
  }
  return undefined;
}

/** A string of a parsed value that is not storable text, and where it is. */
export interface UnstorableString {
  text: string;
  /** The top-level member (or array index) it is in; undefined when the value itself is that string. */
  member?: string;
  /** Whether it is the name of that top-level member, rather than inside its value. */
  isMemberName: boolean;
}

/**
 * RFC 8259 §8.2: "The behavior of software that receives JSON texts
 * containing such values is unpredictable". The first string, names
 * included, that is not storable text. Iterative: a value may nest deeper than the stack.
 */
export function firstUnstorableString(value: unknown): UnstorableString | undefined {
  if (value === null || typeof value !== "object") {
    return typeof value === "string" && !isStorableText(value) ? { text: value, isMemberName: false } : undefined;
  }
  for (const [member, top] of Object.entries(value)) {
    if (!isStorableText(member)) return { text: member, member, isMemberName: true };
    const pending: unknown[] = [top];
    while (pending.length > 0) {
      const v = pending.pop();
      if (typeof v === "string") {
        if (!isStorableText(v)) return { text: v, member, isMemberName: false };
      } else if (v !== null && typeof v === "object") {
        for (const [key, inner] of Object.entries(v)) {
          if (!isStorableText(key)) return { text: key, member, isMemberName: false };
          pending.push(inner);
        }
      }
    }
  }
  return undefined;
}

export type StrictJsonProblem = { kind: "repeated-name"; name: string } | ({ kind: "unstorable" } & UnstorableString);

/**
 * The first problem of `text`, parsed as `value` by JSON.parse: a
 * repeated name, then an unstorable string; undefined when none.
 */
export function strictJsonProblem(text: string, value: unknown): StrictJsonProblem | undefined {
  const name = firstRepeatedName(text);
  if (name !== undefined) return { kind: "repeated-name", name };
  const unstorable = firstUnstorableString(value);
  return unstorable && { kind: "unstorable", ...unstorable };
}
