// A browser session's CDP reached through the Worker's WebSocket relay (workerd): the upgrade answered 101, then
// `Browser.getVersion` over the socket; the product the browser names. And a session bought by a wallet, driven so.
import { expect } from "vitest";

type Through = (input: RequestInfo | URL, init?: RequestInit) => Promise<Response> | Response;

/** Opens the session's `wsEndpoint` through the Worker and asks the browser its version; the socket is closed after. */
export async function browserProductThrough(throughWorker: Through, wsEndpoint: string): Promise<string | undefined> {
  const ws0 = new URL(wsEndpoint);
  const res = await throughWorker(`https://${ws0.host}${ws0.pathname}${ws0.search}`, { headers: { Upgrade: "websocket" } });
  if (res.status !== 101) throw new Error(`the CDP upgrade answered ${res.status}`);
  const ws = (res as Response & { webSocket: (WebSocket & { accept(): void }) | null }).webSocket!;
  ws.accept();
  const answer = new Promise<{ id: number; result?: { product?: string } }>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("no CDP answer")), 15_000);
    ws.addEventListener("message", (m: MessageEvent) => {
      const msg = JSON.parse(String(m.data));
      if (msg.id === 1) {
        clearTimeout(t);
        resolve(msg);
      }
    });
  });
  ws.send(JSON.stringify({ id: 1, method: "Browser.getVersion" }));
  try {
    return (await answer).result?.product;
  } finally {
    ws.close();
  }
}

/**
 * A wallet buys a browser session through the Worker (`pay`: the buyer's x402 fetch over `throughWorker`), reaches its
 * browser over the Worker's CDP relay, and stops it with the wallet token the purchase handed back.
 */
export async function buySessionThroughWorker(
  pay: (input: string, init?: RequestInit) => Promise<Response>,
  throughWorker: Through,
  init: RequestInit,
): Promise<void> {
  const sold = await pay("https://gateway.test/api/session", init);
  expect(sold.status).toBe(200);
  expect(sold.headers.get("x-tollgate-sale")).toBe("charged");
  const session = (await sold.json()) as { id: string; wsEndpoint: string };
  expect(new URL(session.wsEndpoint).host).toBe("gateway.test");
  try {
    expect(await browserProductThrough(throughWorker, session.wsEndpoint)).toMatch(/Chrom/);
  } finally {
    await throughWorker(`https://gateway.test/api/session/${session.id}/stop`, {
      method: "PUT",
      headers: { authorization: `Bearer ${sold.headers.get("x-tollgate-wallet-token")}` },
    });
  }
}
