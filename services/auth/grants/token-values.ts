// Opaque token values: a recognisable prefix and 256 random bits
// (base64url). Only tokenHash() of a value is ever stored.
import { randomBytes } from "node:crypto";

export const TOKEN_PREFIX = { access: "bca_", refresh: "bcr_", code: "bcc_" } as const;

export const newTokenValue = (kind: keyof typeof TOKEN_PREFIX) =>
  `${TOKEN_PREFIX[kind]}${randomBytes(32).toString("base64url")}`;
