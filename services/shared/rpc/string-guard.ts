// Refuses, with INVALID_ARGUMENT, a request whose strings are not storable
// text (storable-text.ts), before any handler sees it: one interceptor walks
// every string of the message by its descriptor, so no handler has to remember.
import { ScalarType, type DescField, type DescMessage, type Message } from "@bufbuild/protobuf";
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
  if (field.fieldKind === "enum") return false;
  if (field.fieldKind === "map" && field.mapKey === ScalarType.STRING) return true;
  return field.message ? mayHoldStrings(field.message, seen) : field.scalar === ScalarType.STRING;
}

export function findUnsafeString(desc: DescMessage, message: Message): string | undefined {
  if (!mayHoldStrings(desc)) return undefined;
  return walk(reflect(desc, message), "");
}

/** The path of `value` (a nested message, when `message`) or of the first unsafe string in it. */
function check(value: unknown, message: boolean, path: string): string | undefined {
  if (message) return walk(value as ReflectMessage, `${path}.`);
  return typeof value === "string" && !isStorableText(value) ? path : undefined;
}

function walk(msg: ReflectMessage, prefix: string): string | undefined {
  for (const field of msg.fields) {
    if (!msg.isSet(field)) continue;
    const name = prefix + field.name;
    let found: string | undefined;
    if (field.fieldKind === "scalar" || field.fieldKind === "message") {
      found = check(msg.get(field), field.fieldKind === "message", name);
    } else if (field.fieldKind === "list") {
      let i = 0;
      for (const item of msg.get(field)) found ??= check(item, field.listKind === "message", `${name}[${i++}]`);
    } else if (field.fieldKind === "map") {
      for (const [key, value] of msg.get(field)) {
        found ??=
          check(key, false, `${name}[key]`) ?? check(value, field.mapKind === "message", `${name}[${String(key)}]`);
      }
    }
    if (found) return found;
  }
  return undefined;
}

/** Throws INVALID_ARGUMENT, naming the field, when a string of `message` holds U+0000 or a lone surrogate. */
function refuseUnsafeStrings(desc: DescMessage, message: Message): void {
  const found = findUnsafeString(desc, message);
  if (found)
    throw new ConnectError(
      `${found}: must not contain control characters (U+0000) or a lone surrogate`,
      Code.InvalidArgument,
    );
}

/**
 * The guard of the servers, for every caller, and of the project's
 * client (an encoded lone surrogate arrives as U+FFFD).
 */
export function stringGuardInterceptor(): Interceptor {
  return (next) => (req) => {
    if (!req.stream) refuseUnsafeStrings(req.method.input, req.message as Message);
    return next(req);
  };
}
