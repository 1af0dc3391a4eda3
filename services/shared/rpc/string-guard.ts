// Refuses, with INVALID_ARGUMENT, a request whose strings carry U+0000 or a
// lone surrogate, before any handler sees it: PostgreSQL cannot store U+0000
// in text ("invalid byte sequence for encoding UTF8: 0x00") and a lone
// surrogate has no UTF-8 form (it would be stored as U+FFFD, a different
// value than the caller sent). One interceptor walks every string field of
// the request message (nested messages, repeated fields, maps) by the
// message's descriptor, so that no handler has to remember.
import type { DescField, DescMessage, Message } from "@bufbuild/protobuf";
import { reflect, type ReflectMessage } from "@bufbuild/protobuf/reflect";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { isStorableText } from "../storable-text.js";

/** Messages with no string anywhere inside, by type name: skipped without a walk. */
const stringless = new Map<string, boolean>();

function mayHoldStrings(desc: DescMessage, seen = new Set<string>()): boolean {
  const known = stringless.get(desc.typeName);
  if (known !== undefined) return !known;
  if (seen.has(desc.typeName)) return true; // a recursive type: walk it
  seen.add(desc.typeName);
  const holds = desc.fields.some((f) => fieldMayHoldStrings(f, seen));
  stringless.set(desc.typeName, !holds);
  return holds;
}

function fieldMayHoldStrings(field: DescField, seen: Set<string>): boolean {
  switch (field.fieldKind) {
    case "scalar":
    case "list":
      if (field.scalar === 9 /* ScalarType.STRING */) return true;
      return field.fieldKind === "list" && field.listKind === "message" ? mayHoldStrings(field.message, seen) : false;
    case "map":
      return (
        field.mapKey === 9 ||
        (field.mapKind === "scalar" && field.scalar === 9) ||
        (field.mapKind === "message" && mayHoldStrings(field.message, seen))
      );
    case "message":
      return mayHoldStrings(field.message, seen);
    case "enum":
      return false;
  }
}

/** The path of the first unsafe string in `message`, if any. */
export function findUnsafeString(desc: DescMessage, message: Message): string | undefined {
  if (!mayHoldStrings(desc)) return undefined;
  return walk(reflect(desc, message), "");
}

const unsafe = (v: unknown) => typeof v === "string" && !isStorableText(v);

function walk(msg: ReflectMessage, prefix: string): string | undefined {
  for (const field of msg.fields) {
    if (!msg.isSet(field)) continue;
    const name = prefix + field.name;
    switch (field.fieldKind) {
      case "scalar":
        if (unsafe(msg.get(field))) return name;
        break;
      case "message": {
        const found = walk(msg.get(field), `${name}.`);
        if (found) return found;
        break;
      }
      case "list": {
        let i = 0;
        for (const item of msg.get(field)) {
          const found =
            field.listKind === "message"
              ? walk(item as ReflectMessage, `${name}[${i}].`)
              : unsafe(item)
                ? `${name}[${i}]`
                : undefined;
          if (found) return found;
          i++;
        }
        break;
      }
      case "map":
        for (const [key, value] of msg.get(field)) {
          if (unsafe(key)) return `${name}[key]`;
          const found =
            field.mapKind === "message"
              ? walk(value as ReflectMessage, `${name}[${String(key)}].`)
              : unsafe(value)
                ? `${name}[${String(key)}]`
                : undefined;
          if (found) return found;
        }
        break;
    }
  }
  return undefined;
}

/** Throws INVALID_ARGUMENT, naming the field, when a string of `message` holds U+0000 or a lone surrogate. */
export function refuseUnsafeStrings(desc: DescMessage, message: Message): void {
  const found = findUnsafeString(desc, message);
  if (found)
    throw new ConnectError(
      `${found}: must not contain control characters (U+0000) or a lone surrogate`,
      Code.InvalidArgument,
    );
}

/**
 * The server's guard, for every caller: another team's client, a JSON body
 * (where a lone surrogate arrives as sent), or U+0000 in any encoding. The
 * project's own client refuses these before sending (client.ts), as an
 * encoded lone surrogate would arrive as U+FFFD.
 */
export function stringGuardInterceptor(): Interceptor {
  return (next) => (req) => {
    if (!req.stream) refuseUnsafeStrings(req.method.input, req.message as Message);
    return next(req);
  };
}
