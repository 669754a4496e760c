// The handlers are one typed registry (src/routing/handler-names.ts): a row or a surface naming a handler outside it
// fails to compile (the `@ts-expect-error` lines below are checked by `npm run typecheck`: were a name accepted, the
// unused directive would fail it), every name is some row's, and the gateway implements every row's.
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { createGateway } from "../../src/gateway.js";
import { HANDLER_NAMES, type HandlerName } from "../../src/routing/handler-names.js";
import type { Handlers } from "../../src/routing/handlers.js";
import { ROUTES, type RouteRow } from "../../src/routing/table.js";

describe("the handler registry", () => {
  it("refuses, at compile time, a row or a surface's handlers naming a handler that does not exist", () => {
    const row: Pick<RouteRow, "handler"> = {
      // @ts-expect-error: no handler of that name is registered
      handler: "sandbox.craete",
    };
    const surface: Handlers = {
      forward: () => new Response(null),
      // @ts-expect-error: a surface cannot add a name the registry does not list
      "sandbox.craete": () => new Response(null),
    };
    const known: HandlerName = "sandbox.create";
    expect([row.handler, Object.keys(surface).length, known]).toEqual(["sandbox.craete", 2, "sandbox.create"]);
  });

  it("lists each name once, every name is some row's handler, and every row's handler is listed", () => {
    expect(new Set(HANDLER_NAMES).size).toBe(HANDLER_NAMES.length);
    const used = new Set(ROUTES.map((r) => r.handler));
    expect(HANDLER_NAMES.filter((n) => !used.has(n))).toEqual([]);
    expect([...used].filter((n) => !(HANDLER_NAMES as readonly string[]).includes(n))).toEqual([]);
  });

  it("is implemented in full by the gateway: every row is mounted with its handler", async () => {
    const g = createGateway(parseConfig({ server: { logLevel: "error" } }), { secrets: {}, logSink: () => {} });
    try {
      const served = await g.app.request("/_tollgate/health");
      expect(served.status).toBe(200);
    } finally {
      await g.close(0);
    }
  });
});
