// RecoverDeliveries: one new attempt for every delivery of a subscription
// since a time that failed, gave up, was cancelled or skipped.
import { Code, ConnectError } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { RecoverDeliveriesRequest, RecoverDeliveriesResponseSchema } from "../../../gen/bizcard/delivery/v1/delivery_pb.js";

export function createRecovery(): (req: RecoverDeliveriesRequest) => Promise<MessageInitShape<typeof RecoverDeliveriesResponseSchema>> {
  return async () => {
    throw new ConnectError("not built yet", Code.Unimplemented);
  };
}
