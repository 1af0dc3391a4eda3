// What the generator cannot know about single operations, keyed by operationId.
import type { OperationFixes } from "./transform.js";

export const OPERATION_FIXES: OperationFixes = {
  // A PUT without a body changes nothing but re-enables a disabled subscription.
  updateSubscription: (operation) => {
    if (operation.requestBody) operation.requestBody.required = false;
  },
};
