// limit and cursor of the list tools: the REST list's (gateway/schemas/common.ts
// ListQuery, with the same bounds and the same words), limit being a JSON
// number here rather than a query string's text.
import { z } from "zod";
import { ListQuery } from "../schemas/common.js";

export function listArguments(fallback: number, max: number) {
  const query = ListQuery(fallback, max).shape;
  const badLimit = `limit: expected a whole number from 1 to ${max}`;
  return {
    limit: z
      .int({ error: badLimit })
      .min(1, { error: badLimit })
      .max(max, { error: badLimit })
      .optional()
      .describe(query.limit.description ?? ""),
    cursor: query.cursor.describe("Where the page starts: the next_cursor of the previous page"),
  };
}

/** The next page's cursor of a list's structured content: null on the last page. */
export const NextCursor = z
  .string()
  .nullable()
  .describe("Pass it as cursor to read the next page; null on the last page");
