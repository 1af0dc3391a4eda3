// The scopes this server knows, and what each grants (docs/interface.md, "Scopes").
export const SCOPES = {
  "organisation:read": "See your organisation's name",
  "webhooks:read": "See the webhook subscriptions this application made",
  "webhooks:write": "Create, change and delete this application's webhook subscriptions",
  "contacts:read": "Read your organisation's contacts and be told when they change",
} as const;

export type Scope = keyof typeof SCOPES;
export const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

export function isScope(value: string): value is Scope {
  return Object.hasOwn(SCOPES, value);
}

/** The scopes named, in the server's order; every scope when none is named. */
export function scopesOrAll(named: readonly string[]): Scope[] {
  return named.length ? ALL_SCOPES.filter((s) => named.includes(s)) : [...ALL_SCOPES];
}
