// The boundary lint's rules on money, the operator wing and the OAuth server (.dependency-cruiser.cjs), shown to catch a planted violation
// (payments only through its door, payments importing no operators, operator actions below their faces, oauth apart from the console):
// dependency-cruiser runs (as `npm run lint:boundaries` does) with the repo's own rules on a few files written to a
// temporary tree shaped like the repo, and must name the rule; the same files without the forbidden import pass.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cruisePlanted } from "./planted-tree.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "tollgate-plant-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes `files` under a fresh tree and cruises it with the repo's rules: the names of the rules broken, per importer. */
async function cruise(name: string, files: Record<string, string>): Promise<Array<{ from: string; rule: string }>> {
  return (await cruisePlanted(join(dir, name), files)).map((v) => ({ from: v.from, rule: v.rule }));
}

describe("the boundary lint on money and the operator wing", () => {
  it("catches an import from src/payments into src/operators (payments announces through its port instead)", async () => {
    const planted = await cruise("payments", {
      "src/operators/alerts/webhooks.ts": "export const deliver = () => {};\n",
      "src/payments/events.ts": "export interface MoneyEvents { announce(): void }\n",
      "src/payments/spend.ts": 'import { deliver } from "../operators/alerts/webhooks";\nexport const spend = () => deliver();\n',
      "src/payments/index.ts": 'export type { MoneyEvents } from "./events";\n',
      // the other way is the listener's (through the door): allowed
      "src/operators/alerts/money-listener.ts":
        'import type { MoneyEvents } from "../../payments/index";\nexport const l: MoneyEvents = { announce() {} };\n',
    });
    expect(planted).toEqual([{ from: "src/payments/spend.ts", rule: "payments-import-no-operators" }]);
    const clean = await cruise("payments-clean", {
      "src/payments/events.ts": "export interface MoneyEvents { announce(): void }\n",
      "src/payments/spend.ts": 'import type { MoneyEvents } from "./events";\nexport const spend = (e: MoneyEvents) => e.announce();\n',
    });
    expect(clean).toEqual([]);
  }, 60_000);

  it("catches an import into src/payments/ that does not go through its door (src/payments/index.ts)", async () => {
    const payments = {
      "src/payments/spend.ts": "export const reserveSpend = () => 1;\n",
      "src/payments/payer.ts": 'import { reserveSpend } from "./spend";\nexport const payX402 = () => reserveSpend();\n',
      "src/payments/index.ts": 'export { payX402 } from "./payer";\n',
    };
    const planted = await cruise("door", {
      ...payments,
      // a surface and a chain step reaching behind the door
      "src/search/routes.ts": 'import { reserveSpend } from "../payments/spend";\nexport const search = () => reserveSpend();\n',
      "middleware/meter/index.ts": 'import { payX402 } from "../../src/payments/payer";\nexport const meter = () => payX402();\n',
      // through the door, and inside the room: allowed
      "src/sessions/routes.ts": 'import { payX402 } from "../payments/index";\nexport const pay = () => payX402();\n',
    });
    expect(planted.sort((a, b) => a.from.localeCompare(b.from))).toEqual([
      { from: "middleware/meter/index.ts", rule: "payments-through-its-door" },
      { from: "src/search/routes.ts", rule: "payments-through-its-door" },
    ]);
    const clean = await cruise("door-clean", {
      ...payments,
      "src/search/routes.ts": 'import { payX402 } from "../payments/index";\nexport const search = () => payX402();\n',
    });
    expect(clean).toEqual([]);
  }, 60_000);

  it("catches hono, or an HTTP face, imported by an operator action", async () => {
    const planted = await cruise("actions", {
      "src/operators/http/admin/validate.ts": "export const validBody = () => {};\n",
      "src/operators/actions/tenants.ts": 'import type { Context } from "hono";\nexport const create = (c: Context) => c;\n',
      "src/operators/actions/keys.ts": 'import { validBody } from "../http/admin/validate";\nexport const create = () => validBody();\n',
      // a face calling an action is the way round it should be
      "src/operators/http/admin/keys.ts": 'import { create } from "../../actions/keys";\nexport const row = () => create();\n',
    });
    expect(planted.sort((a, b) => a.from.localeCompare(b.from))).toEqual([
      { from: "src/operators/actions/keys.ts", rule: "operator-actions-below-their-faces" },
      { from: "src/operators/actions/tenants.ts", rule: "operator-actions-import-no-hono" },
    ]);
  }, 60_000);

  it("catches the OAuth server importing the console, and the admin API importing the console", async () => {
    const planted = await cruise("oauth-console", {
      "src/pages/document.ts": "export const Document = () => '';\n",
      "src/console/link.ts": "export const redeemLink = () => undefined;\n",
      "src/oauth/authorize.ts":
        'import { redeemLink } from "../console/link";\nimport { Document } from "../pages/document";\nexport const a = () => [redeemLink(), Document()];\n',
      "src/operators/http/admin/index.ts": 'import { redeemLink } from "../../../console/link";\nexport const h = () => redeemLink();\n',
      // the console using the shared kit is the way it should be
      "src/console/layout.ts": 'import { Document } from "../pages/document";\nexport const l = () => Document();\n',
    });
    expect(planted.sort((a, b) => a.from.localeCompare(b.from))).toEqual([
      { from: "src/oauth/authorize.ts", rule: "oauth-imports-no-console" },
      { from: "src/operators/http/admin/index.ts", rule: "admin-api-imports-no-console" },
    ]);
    const clean = await cruise("oauth-console-clean", {
      "src/pages/document.ts": "export const Document = () => '';\n",
      "src/operators/actions/console-links.ts": "export const redeemLink = () => undefined;\n",
      "src/oauth/authorize.ts":
        'import { redeemLink } from "../operators/actions/console-links";\nimport { Document } from "../pages/document";\nexport const a = () => [redeemLink(), Document()];\n',
      "src/console/layout.ts": 'import { Document } from "../pages/document";\nexport const l = () => Document();\n',
    });
    expect(clean).toEqual([]);
  }, 60_000);
});
