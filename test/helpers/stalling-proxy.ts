// A proxy in front of the emulator that misbehaves once a payment signature arrives: it forwards the paid request
// (so the upstream settles) and never answers, or swallows it (so nothing settles). Models a lost connection.
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";

export type StallMode = "forward-then-stall" | "swallow";

export async function startStallingProxy(target: string, mode: StallMode) {
  const t = new URL(target);
  let paidSeen = 0;
  const server = createServer((req, res) => {
    const paid = !!(req.headers["payment-signature"] || req.headers["x-payment"]);
    if (paid) paidSeen++;
    if (paid && mode === "swallow") {
      req.resume();
      return; // never answer
    }
    const up = request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers }, (ur) => {
      if (paid) {
        ur.resume(); // the upstream did the work and settled; the answer is lost
        return;
      }
      res.writeHead(ur.statusCode ?? 502, ur.headers);
      ur.pipe(res);
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    paidSeen: () => paidSeen,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
