// A client's registration as the RPC contract shows it (bizcard.auth.v1.Client).
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ClientSchema, type Client as ClientMessage } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import type { Client } from "./client.entity.js";

export const toClientMessage = (c: Client): ClientMessage =>
  create(ClientSchema, {
    clientId: c.id,
    name: c.name,
    redirectUris: c.redirectUris,
    scopes: c.scopes,
    public: c.public,
    ownerOrganisationId: c.ownerOrganisationId ?? "",
    createTime: timestampFromDate(c.createdAt),
    grantTypes: c.grantTypes,
  });
