// Headers the chain puts on its answer after the handler (x-request-id, the rate limit's). An answer whose head is
// written by the Node entry itself (a direct relay, src/platform/node/direct-relay.ts) is a body-less Response whose
// added headers are gathered here, in a plain record merged when its head is written: a `Headers` would be built for
// it and each value converted, a few µs a request. On Node, an answer whose headers nobody read gets them in the record
// it was made with (writeUnreadHeadersWith); any other answer gets them on its `Headers`, as usual.
// The record sits on the answer itself (a property, not a WeakMap entry: no hash and no ephemeron per request).
const DEFERRED = Symbol("tollgate.deferredHeaders");
type Deferring = Response & { [DEFERRED]?: Record<string, string> };

/** The platform's way to add a header to an answer whose headers nobody read yet, without building them (Node). */
let writeUnread: ((res: Response, name: string, value: string) => boolean) | undefined;

/** Set by the Node entry (src/platform/node/unread-headers.ts); false from it means "set it the usual way". */
export function writeUnreadHeadersWith(writer: typeof writeUnread): void {
  writeUnread = writer;
}

/** Makes `res` gather the headers set with setResponseHeader; returns the record they land in (lower-case names). */
export function deferResponseHeaders(res: Response): Record<string, string> {
  const added: Record<string, string> = {};
  (res as Deferring)[DEFERRED] = added;
  return added;
}

/** Sets a header (a lower-case name) on the chain's answer; throws as `Headers.set` does on an immutable one. */
export function setResponseHeader(res: Response, name: string, value: string): void {
  const added = (res as Deferring)[DEFERRED];
  if (added) added[name] = value;
  else if (!writeUnread?.(res, name, value)) res.headers.set(name, value);
}
