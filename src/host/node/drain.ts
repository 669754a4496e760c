// Graceful drain of the Node server: stop accepting, let in-flight requests finish, close WebSockets with 1001.
import type { Server, ServerResponse } from "node:http";
import type { WebSocketServer } from "ws";

export interface DrainReport {
  /** Requests still running when drain began, and how many of them were cut at the deadline. */
  inFlight: number;
  cut: number;
  webSockets: number;
}

/**
 * Tracks the server's in-flight requests so a drain can wait for exactly them. From the moment a drain begins, every
 * answer says `Connection: close` and each connection is closed as soon as it is idle, so keep-alive clients move on.
 */
export function drainable(server: Server, wss: WebSocketServer) {
  // A count, not a set of the responses: a long-lived Set holding each in-flight response kept every request's objects
  // reachable through V8's young-generation collections, which promoted them to the old generation (~6 KB a request).
  // Cutting what is left at the deadline needs no list: the server closes every connection.
  let inFlight = 0;
  let draining = false;
  let settle: (() => void) | undefined;
  // One listener for every response ('close' comes once each): no closure per request.
  const finished = () => {
    inFlight--;
    if (!draining) return;
    server.closeIdleConnections();
    if (inFlight === 0) settle?.();
  };

  server.on("request", (_req, res: ServerResponse) => {
    if (draining) res.setHeader("connection", "close");
    inFlight++;
    res.on("close", finished);
  });

  return {
    get draining() {
      return draining;
    },
    /**
     * Stops accepting connections (new ones are refused), closes WebSockets with 1001 "going away", and resolves when
     * every in-flight request has finished or `deadlineMs` has passed; whatever is left then is cut.
     */
    async drain(deadlineMs: number): Promise<DrainReport> {
      draining = true;
      const report: DrainReport = { inFlight, cut: 0, webSockets: wss.clients.size };
      const closed = new Promise<void>((r) => server.close(() => r()));
      server.closeIdleConnections();
      const sockets = [...wss.clients];
      const socketsClosed = Promise.all(
        sockets.map((ws) => new Promise<void>((r) => (ws.readyState === ws.CLOSED ? r() : ws.once("close", () => r())))),
      );
      for (const ws of sockets) ws.close(1001, "gateway shutting down");
      const requestsDone = inFlight === 0 ? Promise.resolve() : new Promise<void>((r) => (settle = r));
      const finished = Promise.all([requestsDone, socketsClosed]);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const deadline = new Promise<void>((r) => (timer = setTimeout(r, deadlineMs)));
      await Promise.race([finished, deadline]);
      clearTimeout(timer);
      report.cut = inFlight;
      // WebSockets had the whole drain to finish their closing handshake; the rest, and any request past the deadline, are cut.
      for (const ws of wss.clients) ws.terminate();
      server.closeAllConnections();
      await closed;
      return report;
    },
  };
}
