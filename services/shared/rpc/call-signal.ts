// The AbortSignal of a call the lean server serves (lean-server.ts).
import { Code, ConnectError } from "@connectrpc/connect";

/** Registers `abort` to run when the caller goes away before the answer. */
export type OnCallerGone = (abort: () => void) => void;

/**
 * The call's AbortSignal, made only when a handler or interceptor reads it:
 * aborted at the deadline, when the caller goes away, and when the call ends
 * (as connect's handler context does).
 */
export class CallSignal {
  private controller: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ended = false;

  constructor(
    private readonly gone: OnCallerGone,
    private readonly deadline: number | undefined,
  ) {}

  get signal(): AbortSignal {
    if (this.controller) return this.controller.signal;
    const controller = (this.controller = new AbortController());
    if (this.ended) {
      controller.abort();
      return controller.signal;
    }
    if (this.deadline !== undefined) {
      const expire = () => controller.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded));
      const left = this.deadline - Date.now();
      if (left <= 0) expire();
      else this.timer = setTimeout(expire, left);
    }
    this.gone(() => {
      if (!this.ended) controller.abort(new ConnectError("operation canceled", Code.Canceled));
    });
    return controller.signal;
  }

  end(reason?: unknown): void {
    this.ended = true;
    if (!this.controller) return;
    clearTimeout(this.timer);
    this.controller.abort(reason);
  }
}

