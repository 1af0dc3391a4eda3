// The auth service as its own process.
import { serviceMain } from "../shared/service-main.js";
import { createAuthApp } from "./auth-app.js";

await serviceMain({ name: "auth", port: (c) => c.AUTH_RPC_PORT, create: createAuthApp });
