// The delivery service as its own process.
import { serviceMain } from "../shared/service-main.js";
import { createDeliveryApp } from "./delivery-app.js";

await serviceMain({ name: "delivery", port: (c) => c.DELIVERY_RPC_PORT, create: createDeliveryApp });
