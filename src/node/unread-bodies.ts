// A request answered before its body was read to the end (a 413 past a route's limit, a refusal before the body was
// looked at) leaves the rest of that body on its connection. @hono/node-server means to discard it, but a Web stream
// the gateway opened over the body and stopped reading keeps the socket paused, so the connection hangs until the
// server gives up on it, and a client that reused it for its next request gets no answer. Here the rest is read and
// dropped (bounded in bytes and time, like nginx's lingering close), so the connection serves the next request, or
// is closed once the bound is passed (after the answer has been written).
import type { IncomingMessage, ServerResponse } from "node:http";

/** Bytes of an unread body dropped before the connection is closed instead. */
const MAX_DISCARD_BYTES = 64 * 1024 * 1024;
/** How long the rest may take to arrive before the connection is closed instead. */
const MAX_DISCARD_MS = 1000;

interface NodeClient {
  incoming?: IncomingMessage;
  outgoing?: ServerResponse;
}

function discardRest(incoming: IncomingMessage): void {
  if (incoming.readableEnded || incoming.destroyed) return;
  // The Web stream's listener (nobody reads it any more) pauses the socket each time its queue is full.
  incoming.removeAllListeners("data");
  let bytes = 0;
  const stop = () => {
    clearTimeout(timer);
    incoming.off("data", onData);
    const socket = incoming.socket;
    if (socket && !socket.destroyed) socket.destroySoon();
  };
  const onData = (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > MAX_DISCARD_BYTES) stop();
  };
  const timer = setTimeout(stop, MAX_DISCARD_MS);
  timer.unref();
  incoming.on("data", onData);
  incoming.once("end", () => {
    clearTimeout(timer);
    incoming.off("data", onData);
  });
  incoming.resume();
}

type Fetch<E> = (req: Request, env: E) => Response | Promise<Response>;

/** Wraps the server's fetch: once an answer is written, whatever is left of its request's body is discarded. */
export function withUnreadBodiesDiscarded<E>(fetch: Fetch<E>): Fetch<E> {
  return async (req, env) => {
    const res = await fetch(req, env);
    const { incoming, outgoing } = (env ?? {}) as NodeClient;
    if (incoming && outgoing && !incoming.readableEnded && incoming.method !== "GET" && incoming.method !== "HEAD")
      outgoing.once("finish", () => discardRest(incoming));
    return res;
  };
}
