// The guard's bookkeeping on a scripted stream (pure logic; the browser side is played by the test). The real thing,
// against Chromium through the gateway: test/gateway/cdp-floor.test.ts, cdp-fill.test.ts, test/workers/cdp-guard.test.ts.
import { describe, expect, it } from "vitest";
import { CdpGuard } from "./cdp-guard.js";
import { OWN_ID_BASE, secretHostMatches } from "./cdp-guard-rules.js";

interface Msg {
  id: number;
  method?: string;
  params: { targetId?: string; sessionId?: string };
  sessionId?: string;
  error?: unknown;
}

function harness(opts: { refuseAttach?: boolean } = {}) {
  const toClient: Msg[] = [];
  const toUpstream: Msg[] = [];
  const closedTargets: string[] = [];
  const failures: string[] = [];
  let closed: [number, string] | undefined;
  let guard: CdpGuard;
  const io = {
    toClient: (m: string) => toClient.push(JSON.parse(m)),
    toUpstream: (m: string) => {
      const msg = JSON.parse(m) as Msg;
      toUpstream.push(msg);
      // The browser: answers the guard's own commands at once.
      if (msg.id >= OWN_ID_BASE)
        queueMicrotask(() => {
          if (msg.method === "Target.attachToBrowserTarget") {
            if (opts.refuseAttach) return guard.fromUpstream(JSON.stringify({ id: msg.id, error: { message: "Not allowed" } }));
            guard.fromUpstream(
              JSON.stringify({
                method: "Target.attachedToTarget",
                params: { sessionId: "GW", targetInfo: { targetId: "b", type: "browser" } },
              }),
            );
            return guard.fromUpstream(JSON.stringify({ id: msg.id, result: { sessionId: "GW" } }));
          }
          guard.fromUpstream(JSON.stringify({ id: msg.id, result: {}, ...(msg.sessionId ? { sessionId: msg.sessionId } : {}) }));
        });
    },
    close: (code: number, reason: string) => {
      closed = [code, reason];
    },
  };
  guard = new CdpGuard(io, {
    layers: [{ by: "tenant", policy: { domains: { deny: ["denied.example"] } } }],
    events: {
      navigationClosed: (e) => closedTargets.push(`${e.targetId} ${e.origin}`),
      secretFilled: () => {},
      failed: (e) => failures.push(e.reason),
    },
  });
  const settle = () => new Promise((r) => setTimeout(r, 5));
  return { guard, toClient, toUpstream, closedTargets, failures, settle, closed: () => closed };
}

describe("CdpGuard", () => {
  it("holds the client's first messages until its own session is up, and keeps that session out of sight", async () => {
    const h = harness();
    h.guard.fromClient(JSON.stringify({ id: 1, method: "Browser.getVersion" }));
    expect(h.toUpstream.map((m) => m.method)).toEqual(["Target.attachToBrowserTarget"]);
    await h.settle();
    expect(h.toUpstream.map((m) => m.method)).toEqual(["Target.attachToBrowserTarget", "Target.setDiscoverTargets", "Browser.getVersion"]);
    expect(h.toUpstream[1].sessionId).toBe("GW");
    expect(h.toClient).toEqual([]);
  });

  it("refuses ids in its range and messages naming its session", async () => {
    const h = harness();
    await h.settle();
    h.guard.fromClient(JSON.stringify({ id: OWN_ID_BASE + 1, method: "Browser.getVersion" }));
    h.guard.fromClient(JSON.stringify({ id: 2, method: "Target.detachFromTarget", params: { sessionId: "GW" } }));
    expect(h.toClient.map((m) => [m.id, !!m.error])).toEqual([
      [OWN_ID_BASE + 1, true],
      [2, true],
    ]);
    expect(h.toUpstream.some((m) => m.id === 2)).toBe(false);
  });

  it("closes a target whose committed URL is denied, once, with the origin only; other events pass", async () => {
    const h = harness();
    await h.settle();
    const info = (url: string) =>
      JSON.stringify({
        method: "Target.targetInfoChanged",
        params: { targetInfo: { targetId: "T1", type: "page", url } },
        sessionId: "GW",
      });
    h.guard.fromUpstream(info("https://fine.example/"));
    h.guard.fromUpstream(info("https://denied.example/secret?token=1"));
    h.guard.fromUpstream(info("https://denied.example/again"));
    await h.settle();
    expect(h.closedTargets).toEqual(["T1 https://denied.example"]);
    expect(h.toUpstream.filter((m) => m.method === "Target.closeTarget").map((m) => m.params.targetId)).toEqual(["T1"]);
    // The client's own events pass untouched.
    h.guard.fromUpstream(JSON.stringify({ method: "Page.loadEventFired", params: {}, sessionId: "C1" }));
    expect(h.toClient.map((m) => m.method)).toEqual(["Page.loadEventFired"]);
  });

  it("fails closed when the browser will not give it a session", async () => {
    const h = harness({ refuseAttach: true });
    await h.settle();
    expect(h.failures[0]).toContain("Not allowed");
    expect(h.closed()).toEqual([1011, "navigation floor unavailable"]);
  });
});

describe("secretHostMatches", () => {
  it("takes host (port 443 over https) and host:port; plain http only to loopback", () => {
    expect(secretHostMatches(["login.example"], "https://login.example/a")).toBe(true);
    expect(secretHostMatches(["login.example"], "https://login.example:8443/a")).toBe(false);
    expect(secretHostMatches(["login.example:8443"], "https://login.example:8443/a")).toBe(true);
    expect(secretHostMatches(["login.example"], "https://evil.login.example/")).toBe(false);
    expect(secretHostMatches(["login.example:80"], "http://login.example/")).toBe(false);
    expect(secretHostMatches(["127.0.0.1:8080"], "http://127.0.0.1:8080/")).toBe(true);
    expect(secretHostMatches(["127.0.0.1:8080"], "data:text/html,x")).toBe(false);
  });
});
