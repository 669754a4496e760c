import { describe, expect, it } from "vitest";
import { node, parsesUnder, python } from "../../test/fixtures/sdk-models.js";
import { gatewayLiveUrl, rewriteSessionDetail, rewriteSessionSummary } from "./rewrite.js";

const GW = "https://gw.example.com";
const UP = "https://api.upstream.example";
const summary = {
  id: "ses_1",
  teamId: "team_1",
  status: "active",
  startTime: 1767225600000,
  createdAt: "2026-01-01T00:00:00.000Z",
  updatedAt: "2026-01-01T00:00:00.000Z",
  sessionUrl: `${UP}/api/session/ses_1`,
  proxyDataConsumed: "0",
  launchState: null,
  creditsUsed: 0,
  creditBreakdown: { creditsUsed: 0, browserTimeCreditsUsed: 0, proxyDataCreditsUsed: 0 },
};
const detail = {
  ...summary,
  wsEndpoint: "wss://connect.upstream.example/devtools/browser/ses_1?token=up",
  computerActionEndpoint: `${UP}/api/session/ses_1/computer-action`,
  webdriverEndpoint: "https://wd.upstream.example/ses_1?token=up",
  liveUrl: "https://live.upstream.example/?token=upstream-live-token",
  liveDomain: "live.upstream.example",
  token: "up",
};
const ctx = { publicOrigin: GW, sessionToken: "eyJ.gw.session", liveTicket: "eyJ.gw.live" };

describe("session rewrites keep what both SDKs require", () => {
  it("replaces liveUrl with the gateway's live view, never deletes it", () => {
    const out = rewriteSessionDetail(detail, ctx);
    expect(out.liveUrl).toBe(gatewayLiveUrl(GW, "ses_1", "eyJ.gw.live"));
    expect(out.liveUrl).toBe(`${GW}/_tollgate/live/ses_1?ticket=eyJ.gw.live`);
  });

  it("gives liveDomain the gateway's host and webdriverEndpoint an empty string", () => {
    const out = rewriteSessionDetail(detail, ctx);
    expect(out.liveDomain).toBe("gw.example.com");
    expect(out.webdriverEndpoint).toBe("");
  });

  it("leaves no upstream host or credential in a detail", () => {
    const text = JSON.stringify(rewriteSessionDetail(detail, ctx));
    expect(text).not.toMatch(/upstream\.example/);
    expect(text).not.toContain("upstream-live-token");
  });

  it("adds liveUrl when the upstream left it out or sent null (the Python SDK requires a string)", () => {
    const { liveUrl: _l, liveDomain: _d, webdriverEndpoint: _w, ...bare } = detail;
    for (const rec of [bare, { ...bare, liveUrl: null }]) {
      const out = rewriteSessionDetail(rec, ctx);
      expect(typeof out.liveUrl).toBe("string");
      expect(parsesUnder(python.SessionDetail, out)).toEqual([]);
    }
  });

  it("answers a detail that parses under the Python SDK's SessionDetail and the Node SDK's type", () => {
    const out = rewriteSessionDetail(detail, ctx);
    expect(parsesUnder(python.SessionDetail, out)).toEqual([]);
    expect(parsesUnder(node.SessionDetail, out)).toEqual([]);
  });

  it("keeps list entries parseable, access fields emptied rather than dropped", () => {
    const entry = rewriteSessionSummary({ ...summary, liveUrl: detail.liveUrl }, GW);
    expect(entry.liveUrl).toBe("");
    expect(entry.sessionUrl).toBe(`${GW}/api/session/ses_1`);
    expect(parsesUnder(python.Session, entry)).toEqual([]);
    expect(parsesUnder(node.Session, entry)).toEqual([]);
  });
});
