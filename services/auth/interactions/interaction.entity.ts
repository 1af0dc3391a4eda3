import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import type { ResourceName } from "../../shared/protected-resources.js";

/**
 * The validated authorization request an AUTHORIZE interaction holds (its parameters, as the consent must repeat them).
 */
export interface StoredParameters {
  responseType: string;
  clientId: string;
  /** The effective redirect_uri: as sent, or the client's only one when the request named none. */
  redirectUri: string;
  /** Whether the request named redirect_uri (RFC 6749 §4.1.3: then the token request must repeat it). */
  redirectUriSent: boolean;
  /** The scope parameter as sent ("" when the request named none). */
  scope: string;
  state: string;
  codeChallenge: string;
  codeChallengeMethod: string;
  /** RFC 8707: the resources the request named, once each (none, or absent: the REST API only). */
  resources?: ResourceName[];
}

export const InteractionEntity = defineEntity({
  name: "Interaction",
  tableName: "interaction",
  properties: {
    /** Random, 256 bits: the page's URL names it. */
    id: p.text().primary(),
    /** "authorize" or "account". */
    kind: p.text(),
    csrfToken: p.text(),
    clientId: p.text().nullable(),
    parameters: p.json<StoredParameters>().nullable(),
    /** The requested scopes in the server's order. */
    scopes: p.json<string[]>(),
    /** Set once a member is logged in for it. */
    memberId: p.uuid().nullable(),
    organisationId: p.uuid().nullable(),
    memberEmail: p.text().nullable(),
    createdAt: p.datetime(3),
    expiresAt: p.datetime(3).index("interaction_expires_at_index"),
  },
});

export type Interaction = InferEntity<typeof InteractionEntity>;
