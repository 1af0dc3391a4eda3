// What logs may hold: a database error is logged without its statement and
// parameters (they carry password and secret hashes).
import { ForeignKeyConstraintViolationException, UniqueConstraintViolationException } from "@mikro-orm/core";
import { describe, expect, it } from "vitest";
import { safeError } from "../../services/shared/logger.js";

const driverError = (message: string, extra: Record<string, string>) => Object.assign(new Error(message), extra);

describe("safeError", () => {
  it("keeps a database error's kind, SQLSTATE, table and constraint, and the statement without its parameters", () => {
    const err = new ForeignKeyConstraintViolationException(
      driverError(
        `insert into "organisation"."member" ("password_hash") values ('scrypt$32768$8$1$c2FsdA==$aGFzaA==') - insert or update on table "member" violates foreign key constraint "member_organisation_id_fkey"`,
        {
          code: "23503",
          table: "member",
          constraint: "member_organisation_id_fkey",
          detail: "Key (organisation_id)=(1) is not present",
        },
      ),
    );
    const logged = safeError(err);
    expect(logged).toEqual({
      type: "ForeignKeyConstraintViolationException",
      code: "23503",
      table: "member",
      constraint: "member_organisation_id_fkey",
      statement: 'insert into "organisation"."member" ("password_hash") values (?)',
      message: 'insert or update on table "member" violates foreign key constraint "member_organisation_id_fkey"',
    });
    expect(JSON.stringify(logged)).not.toContain("scrypt$");
  });

  it("keeps a message that has no statement in front", () => {
    const err = new UniqueConstraintViolationException(
      driverError("duplicate key value violates unique constraint", { code: "23505" }),
    );
    expect(safeError(err)).toMatchObject({ code: "23505", message: "duplicate key value violates unique constraint" });
  });

  it("serialises other errors with their stack, as pino does", () => {
    const logged = safeError(new TypeError("boom")) as { type: string; message: string; stack: string };
    expect(logged.type).toBe("TypeError");
    expect(logged.message).toBe("boom");
    expect(logged.stack).toContain("TypeError: boom");
  });
});
