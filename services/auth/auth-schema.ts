// The PostgreSQL schema holding the auth service's tables.
export const AUTH_SCHEMA = "auth";
