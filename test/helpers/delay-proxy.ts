// A TCP proxy in front of a state server (redis-server) that delays every chunk by a configurable time per direction
// (half the round-trip time each way), as if the state lived in another region, and counts the sequential round
// trips its clients wait for.
//
// Counting: a "turn" starts when a client sends while none of the proxy's connections is waiting for an answer, and
// ends when an answer has been written back to every waiting connection. Commands sent together (a pipeline, a script,
// or several awaited at once on other connections) overlap and count once; commands sent one after another each count.
// The count is the same whether the state is 0 ms or 200 ms away: it measures the shape of the waiting, not the delay.
import { createServer, createConnection, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

export interface DelayProxy {
  /** redis://127.0.0.1:<port> (or host:port): where clients connect instead of the target. */
  url: string;
  port: number;
  /** The round-trip time added, in ms (half each way). */
  setRtt(ms: number): void;
  /** Sequential turns since the last reset. */
  turns(): number;
  /** Client chunks (commands or pipelines) sent since the last reset. */
  sends(): number;
  reset(): void;
  close(): Promise<void>;
}

export async function startDelayProxy(targetHost: string, targetPort: number, scheme = "redis"): Promise<DelayProxy> {
  let oneWay = 0;
  let turns = 0;
  let sends = 0;
  /** Connections that sent and have not yet had an answer written back. */
  const waiting = new Set<Socket>();
  const sockets = new Set<Socket>();
  // Chunks leave in order: a constant delay per direction, so timers fire in the order they were set.
  const later = (fn: () => void) => (oneWay > 0 ? setTimeout(fn, oneWay) : setImmediate(fn));
  const server = createServer((client) => {
    const upstream = createConnection({ host: targetHost, port: targetPort });
    sockets.add(client);
    sockets.add(upstream);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    client.on("data", (d) => {
      sends++;
      if (waiting.size === 0) turns++;
      waiting.add(client);
      later(() => upstream.writable && upstream.write(d));
    });
    upstream.on("data", (d) => {
      later(() => {
        waiting.delete(client);
        if (client.writable) client.write(d);
      });
    });
    const end = () => {
      waiting.delete(client);
      sockets.delete(client);
      sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end);
    upstream.on("error", end);
    client.on("close", end);
    upstream.on("close", end);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `${scheme}://127.0.0.1:${port}`,
    port,
    setRtt(ms) {
      oneWay = ms / 2;
    },
    turns: () => turns,
    sends: () => sends,
    reset() {
      turns = 0;
      sends = 0;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
