// The agent policy's matching and merging, as pure functions (the chain and both clients: test/gateway/agent-policies.test.ts).
import { describe, expect, it } from "vitest";
import { ROUTES } from "../routing/table.js";
import { applyPolicy, egressCovers, hostMatches, type PolicyLayer } from "./engine.js";

const none = async () => undefined;

describe("agent policy matching", () => {
  it("host rules: a name covers itself and its subdomains, *. only subdomains, case and trailing dot ignored", () => {
    expect(hostMatches("example.com", "example.com")).toBe(true);
    expect(hostMatches("example.com", "A.Example.COM.")).toBe(true);
    expect(hostMatches("example.com", "badexample.com")).toBe(false);
    expect(hostMatches("*.example.com", "example.com")).toBe(false);
    expect(hostMatches("*.example.com", "x.example.com")).toBe(true);
  });

  it("egress entries: ranges by containment, hosts as domain rules, never across kinds", () => {
    expect(egressCovers("10.0.0.0/8", "10.1.0.0/16")).toBe(true);
    expect(egressCovers("10.0.0.0/8", "10.1.2.3")).toBe(true);
    expect(egressCovers("10.1.0.0/16", "10.0.0.0/8")).toBe(false);
    expect(egressCovers("169.254.0.0/16", "169.254.169.254")).toBe(true);
    expect(egressCovers("example.org", "api.example.org")).toBe(true);
    expect(egressCovers("example.org", "*.example.org")).toBe(true);
    expect(egressCovers("*.example.org", "example.org")).toBe(false);
    expect(egressCovers("example.org", "10.0.0.1")).toBe(false);
    expect(egressCovers("*", "anything")).toBe(true);
  });
});

describe("applyPolicy", () => {
  const op: PolicyLayer = { by: "operator", policy: { egress: { denyOut: ["169.254.0.0/16"], allowInternetAccess: false } } };
  const tenant: PolicyLayer = { by: "tenant", policy: { egress: { allowOut: ["10.0.0.0/8", "example.org"] }, maxSandboxMinutes: 20 } };
  const token: PolicyLayer = { by: "token", policy: { egress: { allowOut: ["10.2.0.0/16"] } } };

  it("merges the floor: deny added, allowInternetAccess off, the narrowest allow list sent when the body names none", async () => {
    const out = await applyPolicy("sandboxCreate", [op, tenant, token], { imageName: "node", denyOut: ["10.9.9.9"] }, none);
    expect(out).toEqual({
      imageName: "node",
      denyOut: ["10.9.9.9", "169.254.0.0/16"],
      allowInternetAccess: false,
      allowOut: ["10.2.0.0/16"],
      timeoutMinutes: 20,
    });
  });

  it("refuses a wider rule, naming the policy, field and layer", async () => {
    await expect(applyPolicy("sandboxCreate", [op, tenant], { imageName: "node", allowInternetAccess: true }, none)).rejects.toMatchObject({
      status: 403,
      code: "policy_denied",
      details: { policy: "egress.allowInternetAccess", field: "allowInternetAccess", by: "operator" },
    });
    await expect(applyPolicy("session", [op, tenant, token], { allowOut: ["10.3.0.0/16"] }, none)).rejects.toMatchObject({
      details: { policy: "egress.allowOut", by: "token" },
    });
  });

  it("a snapshot's image is checked; imageId and a bare snapshotId cannot be shown allowed", async () => {
    const images: PolicyLayer = { by: "tenant", policy: { images: ["node", "py*"] } };
    await expect(applyPolicy("sandboxCreate", [images], { snapshotName: "s1" }, async () => "ubuntu")).rejects.toMatchObject({
      details: { policy: "images", field: "snapshotName", value: "ubuntu" },
    });
    expect(await applyPolicy("sandboxCreate", [images], { snapshotName: "s1" }, async () => "python3")).toBeUndefined();
    await expect(applyPolicy("sandboxCreate", [images], { imageId: "i-1" }, none)).rejects.toMatchObject({
      details: { field: "imageId" },
    });
    await expect(applyPolicy("sandboxCreate", [images], {}, none)).rejects.toMatchObject({ details: { field: "imageName" } });
  });

  it("an x402 session cannot carry a floor: refused under one; its timeout is sent within 5–60 under a lifetime limit", async () => {
    await expect(applyPolicy("x402Session", [op], {}, none)).rejects.toMatchObject({
      details: { policy: "egress", field: "body" },
    });
    const life: PolicyLayer = { by: "tenant", policy: { maxSessionMinutes: 30.5 } };
    expect(await applyPolicy("x402Session", [life], {}, none)).toEqual({ timeoutMinutes: 30 });
    await expect(applyPolicy("x402Session", [life], { timeoutMinutes: 45 }, none)).rejects.toMatchObject({
      details: { policy: "maxSessionMinutes" },
    });
    await expect(applyPolicy("x402Session", [{ by: "token", policy: { maxSessionMinutes: 3 } }], {}, none)).rejects.toMatchObject({
      details: { policy: "maxSessionMinutes", by: "token" },
    });
  });

  it("rows without a policy, and callers without layers, are left alone", async () => {
    expect(ROUTES.find((r) => r.name === "session.get")?.agentPolicy).toBeUndefined();
    expect(await applyPolicy("crawl", [], { url: "https://x.test" }, none)).toBeUndefined();
  });
});

describe("policy configuration", () => {
  it("a malformed policy is a config error naming the exact field", async () => {
    const { parseConfig } = await import("../../config/load.js");
    const hash = `sha256:${"a".repeat(64)}`;
    expect(() =>
      parseConfig({
        upstream: { baseUrl: "http://x.test" },
        policy: { egress: { denyOut: [3] } },
        tenants: [{ id: "a", keys: [{ hash }], policy: { maxSandboxMinutes: "x", domains: { allow: ["bad host"] } } }],
      }),
    ).toThrow(
      /policy\.egress\.denyOut\[0\][\s\S]*tenants\[0\]\.policy\.domains\.allow\[0\]: expected a host name[\s\S]*tenants\[0\]\.policy\.maxSandboxMinutes/,
    );
  });
});

describe("the route table names each row's agent policy", () => {
  it("every row that starts work a policy speaks of names one, and only those", () => {
    const named = Object.fromEntries(ROUTES.filter((r) => r.agentPolicy).map((r) => [r.name, r.agentPolicy]));
    expect(named).toMatchObject({
      "web.fetch": "fetchUrl",
      "x402.web.fetch": "fetchUrl",
      "web.batchFetch.start": "fetchUrls",
      "web.crawl.start": "webCrawl",
      "scrape.start": "scrapeUrl",
      "scrape.batch.start": "scrapeUrls",
      "crawl.start": "crawl",
      "extract.start": "extract",
      "session.create": "session",
      "x402.session.create": "x402Session",
      "session.extend": "sessionExtend",
      "sandbox.create": "sandboxCreate",
      "sandbox.network": "sandboxNetwork",
      "task.cua.start": "task",
    });
    // 13 rows plus one start row per agent, nothing else (no read, stop or own row)
    const agents = ROUTES.filter((r) => /^task\.[^.]+\.start$/.test(r.name)).length;
    expect(Object.keys(named).length).toBe(13 + agents);
    expect(Object.keys(named).filter((n) => /\.(get|status|stop|list)$|^(admin|console|own|oauth|mcp)\./.test(n))).toEqual([]);
  });
});
