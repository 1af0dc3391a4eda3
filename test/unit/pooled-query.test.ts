// MikroORM's `?` placeholders become PostgreSQL's $1, $2, … for the hot
// statements run as prepared statements (services/shared/pooled-query.ts);
// a `?` inside a literal, a quoted identifier or a comment is text, not a value.
import { expect, it } from "vitest";
import { inlined, literal, positional } from "../../services/shared/pooled-query.js";

it("numbers the placeholders in order, casts and all", () => {
  expect(positional(`select ?::jsonb, coalesce(a, ?::int) from t where id = ? limit ?`)).toBe(
    `select $1::jsonb, coalesce(a, $2::int) from t where id = $3 limit $4`,
  );
});

it("leaves a ? in a string literal, a quoted identifier or a -- comment alone, even one with an apostrophe", () => {
  const sql = `select 'why?', "odd?name", ''
    -- the row's order? kept
    from t where a = ? and b = 'it''s?' and c = ?`;
  expect(positional(sql)).toBe(`select 'why?', "odd?name", ''
    -- the row's order? kept
    from t where a = $1 and b = 'it''s?' and c = $2`);
});

it("inlines values as literals for a script sent as one simple query: numbers, null, bigints, strings with their quotes doubled", () => {
  expect(inlined(`select ?::int, ?, ?::bigint, ? from t where a = '?' and b = ?`, [4, null, 10n, "it's", "x"])).toBe(
    `select 4::int, null, 10::bigint, 'it''s' from t where a = '?' and b = 'x'`,
  );
});

it("refuses what it cannot write as a literal, and a placeholder without a value", () => {
  expect(() => literal(Number.NaN)).toThrow(TypeError);
  expect(() => literal({})).toThrow(TypeError);
  expect(() => inlined(`select ?, ?`, [1])).toThrow(RangeError);
});
