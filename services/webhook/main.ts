// The webhook service as its own process: it also needs the key its signing secrets are sealed with.
import { WEBHOOK_PROCESS_CHECKS } from "../shared/config.js";
import { serviceMain } from "../shared/service-main.js";
import { createWebhookApp } from "./webhook-app.js";

await serviceMain({
  name: "webhook",
  port: (c) => c.WEBHOOK_RPC_PORT,
  create: createWebhookApp,
  checks: WEBHOOK_PROCESS_CHECKS,
});
