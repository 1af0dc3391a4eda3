// The MCP tools and the scopes each needs: the one table both the tool
// registration (server.ts) and the route's scope pre-check (scope-check.ts)
// read, so a tool can never be served with other scopes than it is checked
// for. Each maps to the REST route doing the same, with that route's scopes:
//
//   get_organisation              GET    /oauth/me                            organisation:read
//   list_contacts                 GET    /oauth/contacts                      contacts:read
//   get_contact                   (the contact of list_contacts, by id)       contacts:read
//   list_webhook_subscriptions    GET    /oauth/webhooks/subscriptions        webhooks:read
//   create_webhook_subscription   POST   /oauth/webhooks/subscriptions        webhooks:write + contacts:read
//   delete_webhook_subscription   DELETE /oauth/webhooks/subscriptions/{id}   webhooks:write

export const TOOL_SCOPES = {
  get_organisation: ["organisation:read"],
  list_contacts: ["contacts:read"],
  get_contact: ["contacts:read"],
  list_webhook_subscriptions: ["webhooks:read"],
  // Every event type is contact.*, so subscribing needs contacts:read too.
  create_webhook_subscription: ["webhooks:write", "contacts:read"],
  delete_webhook_subscription: ["webhooks:write"],
} as const satisfies Record<string, readonly string[]>;

export type ToolName = keyof typeof TOOL_SCOPES;

export const TOOL_NAMES = Object.keys(TOOL_SCOPES) as ToolName[];

/** The scopes a tool needs; none for a name that is not a tool (the server answers it "not found"). */
export function scopesOfTool(name: string): readonly string[] {
  return Object.hasOwn(TOOL_SCOPES, name) ? TOOL_SCOPES[name as ToolName] : [];
}
