// The platform's processes when each runs on its own: what docker-compose.yml
// runs compiled (`node dist/<main>.js`) and `npm run start:distributed` runs
// through tsx (`node --import tsx <main>.ts`), the same entry points.
export const PLATFORM_PROCESSES = [
  { name: "auth", main: "services/auth/main", readyPort: "AUTH_RPC_PORT" },
  { name: "organisation", main: "services/organisation/main", readyPort: "ORGANISATION_RPC_PORT" },
  { name: "webhook", main: "services/webhook/main", readyPort: "WEBHOOK_RPC_PORT" },
  { name: "delivery", main: "services/delivery/main", readyPort: "DELIVERY_RPC_PORT" },
  { name: "gateway", main: "gateway/main", readyPort: "GATEWAY_PORT" },
] as const;

export type PlatformProcess = (typeof PLATFORM_PROCESSES)[number];

/** The command docker-compose.yml runs for a process (the image holds the compiled dist/). */
export const composeCommand = (p: PlatformProcess): string[] => ["node", `dist/${p.main}.js`];

/** The command start:distributed runs for it: the same entry point, compiled on the fly by tsx as `npm start` is. */
export const tsxCommand = (p: PlatformProcess): string[] => ["node", "--import", "tsx", `${p.main}.ts`];
