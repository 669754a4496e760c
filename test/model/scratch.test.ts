import { afterAll, beforeAll, it } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import * as S from "./system.js";
let emu: EmulatorHandle;
beforeAll(async () => {
  emu = await startEmulator({ modules: ["x402"] });
}, 120_000);
afterAll(async () => {
  await emu?.close();
});
it("scratch", async () => {
  const sys = await S.startSystem("memory", emu, undefined);
  const [a, b] = sys.gateways.map((g) => g.url) as [string, string];
  const k = sys.configKeys.stopper!;
  const rs = await Promise.all([0, 1, 2].map((i) => S.paidSearch(i % 2 ? b : a, { key: k }, "x402", `q${i}`)));
  console.log(rs.map((r) => r.status));
  await new Promise((r) => setTimeout(r, 1500));
  const g = await S.consent(a, a, k, ["search"], "0.010");
  console.log("consent", g.status, g.error);
  for (const u of [a, b]) {
    const r = await fetch(`${u}/_tollgate/usage`, { headers: { authorization: `Bearer ${g.access}` } });
    console.log("usage", r.status, (await r.text()).slice(0, 200));
  }
  const m = await S.mintToken(a, k, { kind: "mcp", scopes: ["search"], cap: "0.001", ttlSeconds: 600 });
  console.log("mint", m.status, JSON.stringify(m.json).slice(0, 200));
  console.log("mcp", await S.mcpList(a, { bearer: g.access! }));
  await new Promise((r) => setTimeout(r, 1500));
  const g2 = await S.consent(a, a, k, ["search"], "0.010");
  const r = await fetch(`${a}/_tollgate/usage`, { headers: { authorization: `Bearer ${g2.access}` } });
  console.log("usage later", r.status, (await r.text()).slice(0, 200));
  console.log(sys.logs.filter((l) => l.includes("kill") || l.includes("revok")).join("\n"));
  await sys.close();
}, 60_000);
