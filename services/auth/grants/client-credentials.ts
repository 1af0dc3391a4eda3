// grant_type=client_credentials (RFC 6749 §4.4): a confidential client owned
// by an organisation acts for that organisation. No refresh token.
import { UnauthorizedClient } from "../oauth-errors.js";
import { tokenAnswer } from "./issue-tokens.js";
import { narrowScope } from "./scope-parameter.js";
import { tokenResource } from "../resource-indicators.js";
import type { GrantModule } from "./grant-module.js";

export const clientCredentialsGrant: GrantModule = {
  grantType: "client_credentials",
  required: [],
  async handle({ deps, client, request }) {
    // RFC 6749 §4.4: "The client credentials grant type MUST only be used by confidential clients."
    if (client.public || !client.ownerOrganisationId) {
      throw new UnauthorizedClient("client_credentials is only for confidential clients owned by an organisation");
    }
    const scopes = narrowScope(request.scope, client.scopes);
    // RFC 8707 §2.2: the resource the token is for; none: the REST API.
    const audience = tokenResource(deps.resources, request.resource) ?? "api";
    // RFC 6749 §4.4.3: "A refresh token SHOULD NOT be included."
    const issued = await deps.issueAccessToken({
      clientId: client.id,
      organisationId: client.ownerOrganisationId,
      scopes,
      audience,
    });
    return tokenAnswer(issued);
  },
};
