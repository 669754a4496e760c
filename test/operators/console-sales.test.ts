// The console's Sales page in a real Chromium (puppeteer-core) against the demo stack (gateway + emulator + local chain,
// selling at demo prices): the demo buyer, holding only its wallet, buys a search with @x402/fetch; an operator sees it
// per buyer (calls, inbound, outbound, margin, last purchase, a link to its wallet tenant) and the usage export carries
// the same figures (JSON `buyers`, CSV `sale` rows); a tenant is not shown the page. With CONSOLE_SCREENSHOTS=docs the
// page goes to docs/console-sales.png.
import { join } from "node:path";
import { x402Client, wrapFetchWithPayment } from "@x402/fetch";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DevStack } from "../../src/cli/dev-stack.js";
import { type ConsoleBrowser, startConsoleBrowser } from "../helpers/console-browser.js";

let harness: ConsoleBrowser;
let stack: DevStack;
let base: string;

beforeAll(async () => {
  harness = await startConsoleBrowser("console-sales", ["x402"]);
  ({ stack, base } = harness);
}, 180_000);

afterAll(async () => {
  await harness?.close();
});

describe("the console's Sales page (Chromium)", () => {
  it("shows an operator each wallet buyer's calls, inbound, outbound and margin; the usage export agrees", async () => {
    const key = stack.buyers.demo!;
    const address = privateKeyToAccount(key).address;
    const client = new x402Client().setSpendControls({ allowedAssets: true });
    registerExactEvmScheme(client, { signer: privateKeyToAccount(key) });
    const pay = wrapFetchWithPayment(fetch, client);
    const bought = await pay(`${base}/x402/web/search`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: "console sales" }),
    });
    expect(bought.status).toBe(200);
    expect(bought.headers.get("x-tollgate-sale")).toBe("charged");
    const tenant = `wallet-${address.toLowerCase().slice(2)}`;
    const admin = (path: string) => fetch(`${base}${path}`, { headers: { "x-api-key": stack.tenants.ops! } });
    const [figures] = (await (await admin(`/_tollgate/admin/sales?tenant=${tenant}`)).json()).buyers;
    expect(figures).toMatchObject({ tenant, sales: 1 });

    const ops = await harness.signIn(stack.tenants.ops!);
    const res = await ops.goto(harness.consoleUrl("/sales"));
    expect(res!.status()).toBe(200);
    const row = `tr[data-buyer="${tenant}"]`;
    const cell = (name: string) => ops.$eval(`${row} [data-${name}]`, (el) => (el.textContent ?? "").trim());
    expect(await cell("calls")).toBe("1");
    expect(await cell("inbound")).toBe(`$${figures.inbound}`);
    expect(await cell("outbound")).toBe(`$${figures.outbound}`);
    expect(await cell("margin")).toBe(`$${figures.margin}`);
    expect(await cell("last")).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    expect(Number(figures.margin)).toBeCloseTo(Number(figures.inbound) - Number(figures.outbound), 6);
    // The navigation names the page; the buyer links to its wallet tenant's page.
    expect(await ops.$$eval("nav a", (as) => as.map((a) => a.textContent))).toContain("Sales");
    await ops.screenshot({ path: join(harness.shots, "console-sales.png"), fullPage: true });
    await Promise.all([ops.waitForNavigation(), ops.click(`${row} [data-buyer-link]`)]);
    expect(new URL(ops.url()).pathname).toBe(`/_tollgate/console/tenants/${tenant}`);

    // The usage export: per buyer in the JSON, a `sale` row (inbound as amountUsd, outbound as costUsd) in the CSV.
    const x = await (await admin("/_tollgate/admin/usage/export?format=json")).json();
    expect(x.buyers).toContainEqual({
      tenant,
      payer: address,
      sales: 1,
      inboundUsd: figures.inbound,
      outboundUsd: figures.outbound,
      marginUsd: figures.margin,
    });
    const csv = await (await admin("/_tollgate/admin/usage/export?format=csv")).text();
    const [head, ...lines] = csv.trim().split("\r\n");
    const cols = head!.split(",");
    const sale = lines
      .map((l) => Object.fromEntries(l.split(",").map((v, i) => [cols[i], v])))
      .find((r) => r.tenant === tenant && r.kind === "sale");
    expect(sale).toMatchObject({ route: "sales", entries: "1", amountUsd: figures.inbound, costUsd: figures.outbound });

    // A tenant is not shown the page.
    const acme = await harness.signIn(stack.tenants.acme!);
    expect((await acme.goto(harness.consoleUrl("/sales")))!.status()).toBe(404);
  }, 180_000);
});
