// One POST's answer through undici's dispatch API: the status, Retry-After,
// and at most `maxBytes` of the body, dropped as it comes. One timer bounds the
// whole attempt; a request still connecting when it fires is aborted once
// undici hands over its controller. Not undici's request(), whose response
// stream cost much CPU under bursts (docs/benchmark.md, "The sender").
import type { Dispatcher } from "undici";

/** What came back: an answer (its status, its Retry-After) or an error before the answer ended. */
export type AttemptAnswer =
  | { kind: "answer"; status: number; retryAfter: string | string[] | undefined }
  | { kind: "timeout" }
  | { kind: "error"; error: Error };

/** The error undici's controller is aborted with when the attempt's time is up. */
class AttemptTimeoutError extends Error {
  override readonly name = "TimeoutError";
}

/** The error it is aborted with when the answer's body runs past its cap (the answer itself counts). */
class AnswerTooLargeError extends Error {}

export class AttemptHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private status = 0;
  private retryAfter: string | string[] | undefined;
  private bytes = 0;
  private settled = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly resolve: (answer: AttemptAnswer) => void,
    timeoutMs: number,
    private readonly maxBytes: number,
  ) {
    this.timer = setTimeout(() => this.timeUp(), timeoutMs);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // Time ran out while it was connecting: it goes no further.
    if (this.settled) controller.abort(new AttemptTimeoutError());
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    // RFC 9110 §15.2: a 1xx is interim; the final answer follows.
    if (statusCode < 200) return;
    this.status = statusCode;
    // As it came: parseRetryAfter (webhook-sender.ts) reads a repeated header's first.
    this.retryAfter = headers["retry-after"];
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.bytes += chunk.length;
    if (this.bytes <= this.maxBytes) return;
    // Enough read: the answer stands, the rest is not waited for (the connection is closed).
    this.settle({ kind: "answer", status: this.status, retryAfter: this.retryAfter });
    controller.abort(new AnswerTooLargeError(`the answer ran past ${this.maxBytes} bytes`));
  }

  onResponseEnd(): void {
    this.settle({ kind: "answer", status: this.status, retryAfter: this.retryAfter });
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    this.settle({ kind: "error", error });
  }

  private timeUp(): void {
    this.settle({ kind: "timeout" });
    this.controller?.abort(new AttemptTimeoutError());
  }

  private settle(answer: AttemptAnswer): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.resolve(answer);
  }
}
