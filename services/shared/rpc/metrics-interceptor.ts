// rpc_server_duration_seconds for every call a server answers, over HTTP or
// in memory: the outermost interceptor, so a refused credential or a fault
// turned into INTERNAL is counted with the code the caller saw.
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { rpcServerDuration } from "../metrics/metrics.js";

/** Code → the Connect protocol's name for it ("not_found"), made once. */
const CODE_NAMES = new Map<Code, string>(
  Object.values(Code)
    .filter((c): c is Code => typeof c === "number")
    .map((c) => [c, Code[c]!.replace(/[A-Z]/g, (m, i: number) => (i ? "_" : "") + m.toLowerCase())]),
);

export function metricsInterceptor(service: string): Interceptor {
  // Not an async function: one promise per call (then's), not an async frame's too.
  return (next) => (req) => {
    const started = performance.now();
    const method = req.method.name;
    const observe = (code: string) =>
      rpcServerDuration.observe({ service, method, code }, (performance.now() - started) / 1000);
    let answer;
    try {
      answer = next(req);
    } catch (err) {
      answer = Promise.reject(err);
    }
    return answer.then(
      (res) => (observe("ok"), res),
      (err: unknown) => {
        observe(CODE_NAMES.get(ConnectError.from(err).code) ?? "unknown");
        throw err;
      },
    );
  };
}
