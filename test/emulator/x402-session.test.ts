// Paid browser sessions over x402: a real Chromium per session, managed afterwards with the managementToken only.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { decodePaymentResponseHeader } from "@x402/fetch";
import { createSessionModule } from "../../emulator/sessions/index.js";
import { json, startX402Harness, type X402Harness } from "./x402-harness.js";

let h: X402Harness;

beforeAll(async () => {
  // emulator/index.ts cannot load until every module exists, so the x402 and sessions halves are composed here.
  h = await startX402Harness({
    sessions: async (ctx) => {
      const m = await createSessionModule(ctx);
      return { service: m.service, module: m };
    },
  });
});
afterAll(async () => {
  await h?.close();
});

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function cdpVersion(wsEndpoint: string): Promise<string> {
  const ws = new WebSocket(wsEndpoint);
  try {
    await new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    ws.send(JSON.stringify({ id: 1, method: "Browser.getVersion" }));
    const reply = await new Promise<{ result: { product: string } }>((resolve) =>
      ws.once("message", (d) => resolve(JSON.parse(String(d)))),
    );
    return reply.result.product;
  } finally {
    ws.close();
  }
}

describe("x402 sessions", () => {
  it("creates a session for the tier price and returns its connection details plus a managementToken", async () => {
    const payer = await h.payer(100_000n);
    const res = await payer.pay(h.origin + "/x402/session", json({ timeoutMinutes: 5, screen: { width: 1024, height: 768 } }));
    expect(res.status).toBe(200);
    expect(decodePaymentResponseHeader(res.headers.get("payment-response")!).success).toBe(true);
    const s = await res.json();
    expect(s).toMatchObject({ status: "active", timeoutMinutes: 5 });
    expect(s.id).toBeTruthy();
    expect(typeof s.managementToken).toBe("string");
    expect(Date.parse(s.managementTokenExpiresAt) - Date.now()).toBeGreaterThan(23.9 * 3600_000);
    expect(Date.parse(s.expiresAt) - Date.now()).toBeLessThanOrEqual(5 * 60_000);
    expect(await cdpVersion(s.wsEndpoint)).toMatch(/Chrome/);
    expect(await h.chain.balanceOf(payer.address)).toBe(100_000n - 10_000n);

    const got = await fetch(`${h.origin}/x402/session/${s.id}`, { headers: bearer(s.managementToken) });
    expect(got.status).toBe(200);
    const detail = await got.json();
    expect(detail).toMatchObject({ id: s.id, status: "active", expiresAt: s.expiresAt, timeoutMinutes: 5 });
    expect(detail.wsEndpoint).toBeUndefined(); // credentials are not reissued
    expect(detail.token).toBeUndefined();

    const stopped = await fetch(`${h.origin}/x402/session/${s.id}/stop`, { method: "PUT", headers: bearer(s.managementToken) });
    expect(stopped.status).toBe(200);
    expect(await stopped.json()).toEqual({ success: true });
    const after = await (await fetch(`${h.origin}/x402/session/${s.id}`, { headers: bearer(s.managementToken) })).json();
    expect(after.status).toBe("closed");
    const again = await fetch(`${h.origin}/x402/session/${s.id}/stop`, { method: "PUT", headers: bearer(s.managementToken) });
    expect(await again.json()).toEqual({ success: true }); // stopping a closed session succeeds too
  });

  it("accepts a managementToken only for its own session, and no other credential", async () => {
    const payer = await h.payer(200_000n);
    const a = await (await payer.pay(h.origin + "/x402/session", json({ timeoutMinutes: 5 }))).json();
    const b = await (await payer.pay(h.origin + "/x402/session", json({ timeoutMinutes: 10 }))).json();
    expect(await h.chain.balanceOf(payer.address)).toBe(200_000n - 10_000n - 20_000n);
    try {
      const cases: Array<[Record<string, string>, number, string]> = [
        [{}, 401, "unauthorized"],
        [bearer("not-a-token"), 401, "unauthorized"],
        [bearer(h.ctx.apiKey), 401, "unauthorized"],
        [{ "x-api-key": h.ctx.apiKey }, 401, "unauthorized"],
        [bearer(b.managementToken), 403, "forbidden"],
      ];
      for (const [headers, status, code] of cases) {
        for (const [method, path] of [
          ["GET", `/x402/session/${a.id}`],
          ["PUT", `/x402/session/${a.id}/stop`],
        ]) {
          const res = await fetch(h.origin + path, { method, headers });
          expect(res.status, `${method} ${path} ${JSON.stringify(headers).slice(0, 30)}`).toBe(status);
          expect((await res.json()).code).toBe(code);
        }
      }
      const stillActive = await (await fetch(`${h.origin}/x402/session/${a.id}`, { headers: bearer(a.managementToken) })).json();
      expect(stillActive.status).toBe("active");
    } finally {
      for (const s of [a, b]) await fetch(`${h.origin}/x402/session/${s.id}/stop`, { method: "PUT", headers: bearer(s.managementToken) });
    }
  });

  it("refuses unknown session fields with 400 before payment, and takes no money", async () => {
    const payer = await h.payer(100_000n);
    const res = await payer.pay(h.origin + "/x402/session", json({ timeoutMinutes: 5, enableWebRecording: true }));
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.code).toBe("invalid_request");
    expect(body.message).toContain("enableWebRecording");
    expect(payer.sent).toHaveLength(0);
    expect(await h.chain.balanceOf(payer.address)).toBe(100_000n);
  });
});
