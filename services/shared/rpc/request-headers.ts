// A call's request headers as the interceptors and the handler read them
// (connect's `req.header`, `ctx.requestHeader`: a Web Headers), made from
// the headers the lean server received (Node's IncomingHttpHeaders, or what
// an in-process client built: lowercase names, values already checked).
//
// Why: the server read a call's few headers (the internal credential, the
// request id, the trace context) but copied all of them, seven to ten, into
// a new Headers first, each `append` validating and sorting its entry: about
// 2 % of the platform's CPU a token request under `npm start` (its CPU
// profile, bench/profile-findings.md). These Headers answer `get` and `has`
// from the received object, and become an ordinary Headers, with every entry
// copied as before, the first time anything writes to them or walks them.
import type http from "node:http";

/** An HTTP token (RFC 9110 §5.6.2) in lowercase: a name the received object can hold as it is. */
export const PLAIN_NAME = /^[a-z0-9!#$%&'*+\-.^_`|~]+$/;
/** A value Headers keeps as it is: nothing to strip at either end, no CR, LF or NUL. */
export const PLAIN_VALUE = /^(?:[^\t \r\n\0](?:[^\r\n\0]*[^\t \r\n\0])?)?$/;

/** Web Headers, its methods called on a RequestHeaders once it has copied the received headers in. */
const base = Headers.prototype;
// Typed as a bare constructor: Node's types declare Headers' methods as properties, which a subclass cannot override.
const WebHeaders: new () => object = Headers;

export class RequestHeaders extends WebHeaders implements Headers {
  /** The received headers until copied into this Headers (then undefined). */
  #received: http.IncomingHttpHeaders | undefined;

  constructor(received: http.IncomingHttpHeaders) {
    super();
    this.#received = received;
  }

  /** Copies every received header in (HTTP/2's pseudo-headers, ":path"…, are not headers a handler reads). */
  #copy(): void {
    const received = this.#received;
    if (received === undefined) return;
    this.#received = undefined;
    for (const [key, value] of Object.entries(received)) {
      if (value === undefined || key.charCodeAt(0) === 58) continue;
      if (Array.isArray(value)) for (const v of value) base.append.call(this, key, v);
      else base.set.call(this, key, value);
    }
  }

  /** The received value as Headers would hold it, or undefined when only Headers itself can answer. */
  #read(name: string): string | null | undefined {
    const received = this.#received;
    if (received === undefined) return undefined;
    const key = name.toLowerCase();
    if (!PLAIN_NAME.test(key)) return undefined; // Headers refuses the name (TypeError)
    const value = received[key];
    if (value === undefined) return null;
    if (Array.isArray(value)) return value.length === 0 ? null : value.every((v) => PLAIN_VALUE.test(v)) ? value.join(", ") : undefined;
    return PLAIN_VALUE.test(value) ? value : undefined;
  }

  get(name: string): string | null {
    const value = this.#read(name);
    if (value !== undefined) return value;
    this.#copy();
    return base.get.call(this, name);
  }

  has(name: string): boolean {
    const value = this.#read(name);
    if (value !== undefined) return value !== null;
    this.#copy();
    return base.has.call(this, name);
  }

  set(name: string, value: string): void {
    this.#copy();
    base.set.call(this, name, value);
  }

  append(name: string, value: string): void {
    this.#copy();
    base.append.call(this, name, value);
  }

  delete(name: string): void {
    this.#copy();
    base.delete.call(this, name);
  }

  getSetCookie(): string[] {
    this.#copy();
    return base.getSetCookie.call(this);
  }

  forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void {
    this.#copy();
    base.forEach.call(this, callback, thisArg);
  }

  entries(): ReturnType<Headers["entries"]> {
    this.#copy();
    return base.entries.call(this);
  }

  keys(): ReturnType<Headers["keys"]> {
    this.#copy();
    return base.keys.call(this);
  }

  values(): ReturnType<Headers["values"]> {
    this.#copy();
    return base.values.call(this);
  }

  [Symbol.iterator](): ReturnType<Headers["entries"]> {
    this.#copy();
    return base[Symbol.iterator].call(this);
  }
}
