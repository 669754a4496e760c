// Headers the chain puts on its answer after the handler (x-request-id, the rate limit's). An answer whose head is
// written by the Node entry itself (a direct relay, src/host/node/direct-relay.ts) is a body-less Response whose
// added headers are gathered here, in a plain record merged when its head is written: a `Headers` would be built for
// it and each value converted, a few µs a request. On Node, an answer whose headers nobody read gets them in the record
// it was made with (the gateway's platform.writeUnread, src/web/speed.ts); any other answer gets them on its
// `Headers`, as usual.
// The record sits on the answer itself (a property, not a WeakMap entry: no hash and no ephemeron per request).
import type { PlatformSpeed } from "./speed.js";

const DEFERRED = Symbol("tollgate.deferredHeaders");
type Deferring = Response & { [DEFERRED]?: Record<string, string> };

/** Makes `res` gather the headers set with setResponseHeader; returns the record they land in (lower-case names). */
export function deferResponseHeaders(res: Response): Record<string, string> {
  const added: Record<string, string> = {};
  (res as Deferring)[DEFERRED] = added;
  return added;
}

/** Sets a header (a lower-case name) on the chain's answer; throws as `Headers.set` does on an immutable one. */
export function setResponseHeader(platform: PlatformSpeed, res: Response, name: string, value: string): void {
  const added = (res as Deferring)[DEFERRED];
  if (added) added[name] = value;
  else if (!platform.writeUnread?.(res, name, value)) res.headers.set(name, value);
}
