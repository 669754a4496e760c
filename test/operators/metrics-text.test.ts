// The in-process registry Workers use writes Prometheus text a real parser reads back, escaping included.
import { describe, expect, it } from "vitest";
import { TextRegistry } from "../../src/telemetry/text-registry.js";
import { GatewayMetrics } from "../../src/telemetry/gateway-metrics.js";
import { ROUTES } from "../../src/routing/table.js";
import { histogram, parseExposition, promtoolCheck, sampleSum } from "./prometheus.js";

describe("TextRegistry (Workers and default metrics)", () => {
  it("renders counters, gauges and cumulative histogram buckets that parse back to the same values", async () => {
    const r = new TextRegistry();
    const c = r.counter({ name: "t_requests_total", help: "Requests.", labelNames: ["route", "status"] });
    c.labels("/a", "200").inc();
    c.labels("/a", "200").inc(2);
    c.labels("/b", "404").inc();
    const g = r.gauge({ name: "t_open", help: "Open.", labelNames: ["kind"] });
    g.labels("cdp").inc();
    g.labels("cdp").inc();
    g.labels("cdp").dec();
    const h = r.histogram({ name: "t_seconds", help: "Latency.", labelNames: ["route"], buckets: [1, 0.1] });
    for (const v of [0.05, 0.5, 0.1, 3]) h.labels("/a").observe(v);
    const text = await r.render();
    const families = parseExposition(text);
    expect(families.find((f) => f.name === "t_requests_total")!.type).toBe("COUNTER");
    expect(sampleSum(families, "t_requests_total", { route: "/a", status: "200" })).toBe(3);
    expect(sampleSum(families, "t_requests_total", { route: "/b" })).toBe(1);
    expect(sampleSum(families, "t_open", { kind: "cdp" })).toBe(1);
    const [series] = histogram(text, "t_seconds", { route: "/a" });
    expect(series).toMatchObject({ count: 4, buckets: { "0.1": 2, "1": 3, "+Inf": 4 } });
    expect(series!.sum).toBeCloseTo(3.65, 9);
  });

  it("escapes quotes, backslashes and newlines in label values and help text", async () => {
    const r = new TextRegistry();
    r.counter({ name: "t_odd_total", help: 'A "help"\\ with\na newline.', labelNames: ["v"] })
      .labels('say "hi"\\\nbye')
      .inc();
    const [f] = parseExposition(await r.render());
    expect(f!.help).toBe('A "help"\\ with\na newline.');
    expect(f!.metrics[0]!.labels).toEqual({ v: 'say "hi"\\\nbye' });
  });

  it("refuses to define one metric twice", () => {
    const r = new TextRegistry();
    r.counter({ name: "t_x_total", help: "x", labelNames: [] });
    expect(() => r.gauge({ name: "t_x_total", help: "x", labelNames: [] })).toThrow(/defined twice/);
  });

  it('keeps route and tenant labels bounded: past the cap, values become "other"', async () => {
    const m = new GatewayMetrics(new TextRegistry());
    for (let i = 0; i < 300; i++) m.request(`/route/${i}`, "GET", 200, "acme", 0.001);
    const families = parseExposition(await m.render());
    const routes = new Set(families.find((f) => f.name === "tollgate_requests_total")!.metrics.map((x) => x.labels!.route));
    expect(routes.size).toBe(257);
    expect(sampleSum(families, "tollgate_requests_total", { route: "other" })).toBe(44);
  });

  it("keeps the latency histograms to 11 route classes whatever the routes, and counts refusals, mints, deliveries, kills and alerts", async () => {
    const m = new GatewayMetrics(new TextRegistry());
    m.classifyRows(ROUTES); // as createGateway does
    const routes = [
      "x402.web.search",
      "session.create",
      "sandbox.get",
      "runtime.exec",
      "scrape.start",
      "/_tollgate/usage",
      "/_tollgate/admin/tenants",
    ];
    for (let i = 0; i < 300; i++) {
      m.request(i < 200 ? `weird.route.${i}` : routes[i % routes.length]!, i % 3 ? "GET" : "BREW", 200 + (i % 5), `t${i % 7}`, 0.01);
      m.upstream(routes[i % routes.length]!, 0.02, i % 10 === 0);
    }
    m.refusal("budget_exceeded");
    m.refusal("budget_exceeded");
    m.tokenMinted("search");
    m.webhookDelivery("delivered");
    m.webhookDelivery("given_up");
    m.killSwitch("tenant_killed");
    m.killSwitch("resource_stopped", 3);
    m.alert("wallet.low");
    const text = await m.render();
    const families = parseExposition(text);
    const series = histogram(text, "tollgate_request_duration_seconds");
    expect(series.map((x) => x.labels.class).sort()).toEqual([
      "admin",
      "jobs",
      "other",
      "runtime",
      "sandboxes",
      "search",
      "sessions",
      "tollgate",
    ]);
    expect(series.reduce((n, x) => n + x.count, 0)).toBe(300);
    expect(histogram(text, "tollgate_upstream_duration_seconds").length).toBeLessThanOrEqual(11);
    expect(sampleSum(families, "tollgate_requests_total", { method: "other" })).toBe(100); // BREW is not a label value
    expect(sampleSum(families, "tollgate_refusals_total", { reason: "budget_exceeded" })).toBe(2);
    expect(sampleSum(families, "tollgate_tokens_minted_total", { kind: "search" })).toBe(1);
    expect(sampleSum(families, "tollgate_webhook_deliveries_total", { outcome: "given_up" })).toBe(1);
    expect(sampleSum(families, "tollgate_kill_switch_total", { action: "resource_stopped" })).toBe(3);
    expect(sampleSum(families, "tollgate_alerts_total", { type: "wallet.low" })).toBe(1);
    expect(sampleSum(families, "tollgate_build_info")).toBe(1);
    expect(m.upstreamTally).toMatchObject({ calls: 300, errors: 30 });
    const lint = promtoolCheck(text);
    if (lint.skipped) console.warn(`promtool check metrics skipped: ${lint.skipped}`);
    else expect(lint.problems).toEqual([]);
  });

  it("classes a row by its `metric` field, not by its name; a request no row named by its surface", async () => {
    const m = new GatewayMetrics(new TextRegistry());
    m.classifyRows([
      { name: "session.create", metric: "sessions" },
      { name: "web.search", metric: "agents" }, // a name that reads as search, a field that says otherwise
      { name: "console.overview", metric: "admin" },
    ]);
    for (const route of ["session.create", "web.search", "console.overview", "sandbox.port", "api.web", "/_tollgate/usage", "weird"])
      m.request(route, "GET", 200, "acme", 0.01);
    const classes = histogram(await m.render(), "tollgate_request_duration_seconds").map((x) => x.labels.class);
    expect(classes.sort()).toEqual(["admin", "agents", "other", "ports", "search", "sessions", "tollgate"]);
  });

  it("every route row names its class, one of the 11", () => {
    const allowed = ["search", "sessions", "sandboxes", "runtime", "cdp", "ports", "jobs", "agents", "admin", "tollgate", "other"];
    for (const row of ROUTES) expect(allowed, row.name).toContain(row.metric);
    expect(ROUTES.find((r) => r.name === "admin.usage")?.metric).toBe("admin");
    expect(ROUTES.find((r) => r.name === "runtime.exec")?.metric).toBe("runtime");
    expect(ROUTES.find((r) => r.name === "task.cua.start")?.metric).toBe("agents");
  });
});
