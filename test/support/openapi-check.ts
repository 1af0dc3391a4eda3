// Answers checked against the OpenAPI document: the status is documented for
// the operation, each documented response header is present when required and
// matches its schema, the content type is a documented one and the body is
// valid against its schema (none where none is documented). Schemas are
// checked with ajv's JSON Schema 2020-12 in strict mode, which also rejects a
// misspelt keyword or type in the document itself.
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document and its schemas, of any shape, read by key
type Json = Record<string, any>;

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

/**
 * Statuses any route may give before it runs or when the server fails (an
 * oversized or undecodable request, an unmet Expect, …): the `default`
 * response stands for them; any other status must be listed.
 */
const GENERIC = new Set([400, 405, 408, 411, 413, 414, 415, 417, 431, 500, 501, 502, 503, 504, 505]);

const COMPONENTS = "https://openapi.invalid/components";

export interface OpenApiChecker {
  /** Problems of one answer (none when it matches the document). */
  check(method: string, url: string, answer: Answer): string[];
  /** Whether the document has an operation for this request. */
  documents(method: string, url: string): boolean;
  /** Every example in the document that is not valid against its schema. */
  exampleProblems(): string[];
}

export function openapiChecker(doc: Json): OpenApiChecker {
  // Component references point into the document: give them a home ajv resolves.
  const rewrite = (s: unknown): Json =>
    JSON.parse(JSON.stringify(s).replaceAll('"#/components/schemas/', `"${COMPONENTS}#/$defs/`));
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  // Keywords of OpenAPI's schema dialect that are not JSON Schema's.
  ajv.addVocabulary(["example", "discriminator", "xml", "externalDocs"]);
  ajv.addSchema({ $id: COMPONENTS, $defs: rewrite(doc.components?.schemas ?? {}) });
  const cache = new Map<unknown, ValidateFunction>();
  const compile = (schema: Json): ValidateFunction => {
    let v = cache.get(schema);
    if (!v) cache.set(schema, (v = ajv.compile(rewrite(schema))));
    return v;
  };
  const operations = Object.entries((doc.paths ?? {}) as Json).flatMap(([template, item]) =>
    Object.entries(item as Json)
      .filter(([method]) => ["get", "put", "post", "delete", "patch", "options", "head"].includes(method))
      .map(([method, op]) => ({
        method: method.toUpperCase(),
        template,
        op: op as Json,
        pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}$`),
      })),
  );
  const find = (method: string, url: string) => {
    const path = new URL(url, "http://x").pathname;
    return operations.find((o) => o.method === method.toUpperCase() && o.pattern.test(path));
  };

  function check(method: string, url: string, answer: Answer): string[] {
    const found = find(method, url);
    if (!found) return [`${method} ${new URL(url, "http://x").pathname}: no such operation in the document`];
    const where = `${method} ${found.template} -> ${answer.status}`;
    const responses = found.op.responses as Json;
    const response =
      responses[String(answer.status)] ??
      responses[`${String(answer.status)[0]}XX`] ??
      (GENERIC.has(answer.status) ? responses.default : undefined);
    if (!response) return [`${where}: status not documented (has ${Object.keys(responses).join(", ")})`];
    const problems: string[] = [];
    for (const [name, header] of Object.entries((response.headers ?? {}) as Json)) {
      const value = answer.headers[name.toLowerCase()];
      if (value === undefined) {
        if (header.required) problems.push(`${where}: header ${name} missing`);
        continue;
      }
      const v = compile(header.schema ?? {});
      if (!v(String(value)))
        problems.push(`${where}: header ${name} ${JSON.stringify(value)}: ${ajv.errorsText(v.errors)}`);
    }
    const content = response.content as Json | undefined;
    if (!content) {
      if (answer.body !== "") problems.push(`${where}: a body where none is documented`);
      return problems;
    }
    const type = String(answer.headers["content-type"] ?? "")
      .split(";")[0]!
      .trim();
    const media = content[type];
    if (!media)
      return [
        ...problems,
        `${where}: content-type ${type || "(none)"} not documented (${Object.keys(content).join(", ")})`,
      ];
    let body: unknown = answer.body;
    if (type.endsWith("json")) {
      try {
        body = JSON.parse(answer.body);
      } catch {
        return [...problems, `${where}: the body is not JSON`];
      }
    }
    const v = compile(media.schema ?? {});
    if (!v(body)) problems.push(`${where}: ${ajv.errorsText(v.errors, { dataVar: "body" })}`);
    return problems;
  }

  function exampleProblems(): string[] {
    const problems: string[] = [];
    const media = (where: string, content: Json | undefined) => {
      for (const [type, m] of Object.entries(content ?? {})) {
        if ((m as Json).example === undefined) {
          problems.push(`${where} ${type}: no example`);
          continue;
        }
        const v = compile((m as Json).schema ?? {});
        if (!v((m as Json).example)) problems.push(`${where} ${type}: example ${ajv.errorsText(v.errors)}`);
      }
    };
    for (const { method, template, op } of operations) {
      media(`${method} ${template} request`, op.requestBody?.content);
      for (const [status, response] of Object.entries((op.responses ?? {}) as Json)) {
        media(`${method} ${template} -> ${status}`, (response as Json).content);
        for (const [name, header] of Object.entries(((response as Json).headers ?? {}) as Json)) {
          if (header.example !== undefined && !compile(header.schema ?? {})(header.example))
            problems.push(`${method} ${template} -> ${status}: header ${name} example`);
        }
      }
    }
    for (const [name, item] of Object.entries((doc.webhooks ?? {}) as Json)) {
      for (const [method, op] of Object.entries(item as Json))
        media(`webhook ${name} ${method} request`, (op as Json).requestBody?.content);
    }
    return problems;
  }

  return { check, documents: (method, url) => find(method, url) !== undefined, exampleProblems };
}
