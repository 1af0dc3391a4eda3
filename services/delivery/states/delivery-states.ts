// GetDeliveryStates: a subscription's pause, lowered cap and blocked head.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { GetDeliveryStatesRequest, GetDeliveryStatesResponseSchema } from "../../../gen/bizcard/delivery/v1/delivery_pb.js";

export function createDeliveryStates(): (req: GetDeliveryStatesRequest) => Promise<MessageInitShape<typeof GetDeliveryStatesResponseSchema>> {
  return async () => ({ states: [] });
}
