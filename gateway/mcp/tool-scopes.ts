// The MCP tools and the scopes each needs, those of the REST route doing the
// same: the one table the tool registration and the route's scope pre-check
// read, so a tool is never served with other scopes than it is checked for.

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

/** The scopes a tool needs; none for a name that is not a tool (the server answers it "not found"). */
export function scopesOfTool(name: string): readonly string[] {
  return Object.hasOwn(TOOL_SCOPES, name) ? TOOL_SCOPES[name as ToolName] : [];
}
