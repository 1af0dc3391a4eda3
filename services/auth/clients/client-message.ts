// A client's registration as the RPC contract shows it (bizcard.auth.v1.Client).
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  ClientRegistration,
  ClientSchema,
  type Client as ClientMessage,
} from "../../../gen/bizcard/auth/v1/auth_pb.js";
import type { Client, ClientRegistrationKind } from "./client.entity.js";

export const REGISTRATION: Record<ClientRegistrationKind, ClientRegistration> = {
  operator: ClientRegistration.OPERATOR,
  dynamic: ClientRegistration.DYNAMIC,
  metadata_document: ClientRegistration.METADATA_DOCUMENT,
};

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
    registration: REGISTRATION[(c.registration as ClientRegistrationKind | undefined) ?? "operator"],
    clientUri: c.clientUri ?? "",
    applicationType: c.applicationType ?? "web",
    tokenEndpointAuthMethod: c.tokenEndpointAuthMethod ?? (c.public ? "none" : "client_secret_basic"),
  });
