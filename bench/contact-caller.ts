// The delivery rows' load generator: CreateContact over Connect's unary
// protocol (binary Protobuf, HTTP/1.1, kept-alive connections), sent with
// undici's Pool instead of a full Connect client.
//
// Why: the load generator shares the machine's two cores with the platform,
// PostgreSQL and NATS, and a full client spends more of them on each call
// (docs/benchmark.md); what the platform receives is the same request either
// way (the same path, headers and Protobuf body).
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Pool } from "undici";
import {
  CreateContactRequestSchema,
  CreateContactResponseSchema,
  OrganisationService,
} from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { INTERNAL_AUTH_HEADER } from "../services/shared/rpc/client.js";

// The Connect protocol's unary request: "Content-Type: application/proto" for
// binary Protobuf, and "Connect-Protocol-Version: 1".
const CONNECT_UNARY_PROTO = "application/proto";
const CONNECT_PROTOCOL_VERSION = "1";

export interface ContactCaller {
  /** Creates a contact; resolves to its id, rejects when the call fails (not 200, or past `timeoutMs`). */
  createContact(organisationId: string, firstName: string, email: string): Promise<string>;
  close(): Promise<void>;
}

export function contactCaller(baseUrl: string, internalToken: string, timeoutMs: number): ContactCaller {
  // Enough connections for an open loop's calls in flight when the platform falls behind.
  const pool = new Pool(baseUrl, { connections: 128, pipelining: 1, keepAliveTimeout: 30_000 });
  const path = `/${OrganisationService.typeName}/${OrganisationService.method.createContact.name}`;
  const headers = {
    "content-type": CONNECT_UNARY_PROTO,
    "connect-protocol-version": CONNECT_PROTOCOL_VERSION,
    "connect-timeout-ms": String(timeoutMs),
    [INTERNAL_AUTH_HEADER]: `Bearer ${internalToken}`,
  };
  return {
    async createContact(organisationId, firstName, email) {
      const body = toBinary(
        CreateContactRequestSchema,
        create(CreateContactRequestSchema, { organisationId, fields: { firstName, email } }),
      );
      const res = await pool.request({
        path,
        method: "POST",
        headers,
        body,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      const answer = new Uint8Array(await res.body.arrayBuffer());
      if (res.statusCode !== 200)
        throw new Error(`CreateContact: HTTP ${res.statusCode}: ${Buffer.from(answer).toString("utf8").slice(0, 200)}`);
      const id = fromBinary(CreateContactResponseSchema, answer).contact?.id;
      if (!id) throw new Error("CreateContact: no contact in the answer");
      return id;
    },
    close: () => pool.close(),
  };
}
