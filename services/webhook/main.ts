// The webhook service as its own process.
import { serviceMain } from "../shared/service-main.js";
import { createWebhookApp } from "./webhook-app.js";

await serviceMain({ name: "webhook", port: (c) => c.WEBHOOK_RPC_PORT, create: createWebhookApp });
