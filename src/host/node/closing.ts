// How the Node server ends a connection it will not read to the end: after an answer given before the request's body
// came in whole, after an expectation it cannot meet, and after a request it cannot parse. Either way the client gets
// the answer: the close lingers.
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { bodyTakenWhole } from "./held-body.js";

/** How long a closing connection still reads (and drops) what the client sends. */
const LINGER_MS = 2000;

/**
 * Ends the socket once its writes are out (FIN after the answer) and reads on, for up to LINGER_MS. Closing it with the
 * client's bytes unread resets the connection, and a reset can throw the answer away before the client has read it;
 * a client told to close finishes sending and closes instead.
 */
function lingerAndClose(socket: Duplex): void {
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once("close", () => clearTimeout(timer));
  socket.end();
  socket.resume();
}

/**
 * Marks the answer `Connection: close` when the request's body is still coming in (refused early, or cut short at the
 * body limit): the rest of it is not read, and a keep-alive client would otherwise send its next request on a
 * connection that closes under it. Node then closes the socket right after the answer; here that close lingers.
 */
export function closeAfterEarlyAnswer(incoming: IncomingMessage, outgoing: ServerResponse): void {
  if (incoming.complete || bodyTakenWhole(incoming)) return;
  outgoing.setHeader("connection", "close");
  const socket = incoming.socket as Socket;
  let closing = false;
  socket.destroySoon = () => {
    if (closing) return;
    closing = true;
    lingerAndClose(socket);
  };
}

/**
 * Answers an Expect other than 100-continue with the gateway's JSON 417, closing as after any early answer. Node's own
 * answer is a bare 417; with the body unread and the client's `Connection: close`, it closed at once, and a client
 * still sending its body got a reset instead of the answer.
 */
export function answerFailedExpectations(server: Server): void {
  server.on("checkExpectation", function answerFailedExpectation(req: IncomingMessage, res: ServerResponse) {
    const body = JSON.stringify({ message: "Only Expect: 100-continue is supported.", code: "expectation_failed" });
    closeAfterEarlyAnswer(req, res);
    res.writeHead(417, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body) });
    res.end(body);
  });
}

const PARSE_ERRORS: Record<string, [status: number, code: string, message: string]> = {
  HPE_HEADER_OVERFLOW: [431, "headers_too_large", "The request's headers are too large."],
  ERR_HTTP_REQUEST_TIMEOUT: [408, "request_timeout", "The request did not come in whole in time."],
};

/**
 * Answers a request Node cannot parse (broken framing, a bad request line, headers too large) with the gateway's JSON
 * error, then closes the connection lingering. Node's own answer is a bare 400 followed by an immediate close, which
 * a client still sending its body may never read.
 */
export function answerParseErrors(server: Server): void {
  const answered = new WeakSet<Duplex>();
  server.on("clientError", function answerParseError(err: NodeJS.ErrnoException, socket: Duplex) {
    if (answered.has(socket)) return; // the parser reports again on each chunk that follows
    answered.add(socket);
    // As Node decides: no answer when the client went away, or when one to an earlier request is already on its way.
    const inFlight = (socket as Socket & { _httpMessage?: { _headerSent?: boolean } })._httpMessage;
    if (err.code === "ECONNRESET" || !socket.writable || inFlight?._headerSent) {
      socket.destroy();
      return;
    }
    const [status, code, message] = PARSE_ERRORS[err.code ?? ""] ?? [400, "bad_request", "The request is not valid HTTP/1.1."];
    const body = JSON.stringify({ message, code });
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
    lingerAndClose(socket);
  });
}
