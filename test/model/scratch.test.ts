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
  const [a] = sys.gateways.map((g) => g.url) as [string, string];
  for (let i = 0; i < 3; i++) {
    const g = await S.consent(a, a, sys.configKeys.acme!, ["search", "jobs"], "0.010", ["web_search"]);
    const e = String(g.error ?? "");
    console.log(
      "consent",
      g.status,
      e
        .replace(/<style>[\s\S]*?<\/style>/, "")
        .replace(/<[^>]+>/g, " ")
        .replace(/\s+/g, " ")
        .slice(0, 600),
    );
  }
  await sys.close();
}, 60_000);
