// Assertions on RPC answers.
import { ConnectError } from "@connectrpc/connect";
import { expect } from "vitest";

/** The ConnectError a call fails with; fails the test when the call succeeds. */
export async function rpcError(p: Promise<unknown>): Promise<ConnectError> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(ConnectError);
  return err as ConnectError;
}
