// Tries a raw WebSocket upgrade and reports how it ended: 101 when it opened, else the refusal's status and body.
import WebSocket from "ws";

export function tryUpgrade(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers });
    ws.once("open", () => {
      ws.close();
      resolve({ status: 101, body: null });
    });
    ws.once("unexpected-response", (_req, res) => {
      let text = "";
      res.on("data", (d) => (text += d));
      res.on("end", () => {
        let body: any = text;
        try {
          body = JSON.parse(text);
        } catch {
          /* keep the text */
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    ws.once("error", () => {});
  });
}
