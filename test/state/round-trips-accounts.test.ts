// Sequential state round trips of a creation with several upstream accounts (docs/accounts.md "Across a fleet"), as
// test/state/round-trips.test.ts measures them: the gateway's stores make every call wait DELAY ms first, and a
// class's (fastest with the delay − fastest without) / DELAY is the round trips it waits for. A profile (no limits):
// the ownership claim, with the custody record beside it, 1. A session on accounts with session limits adds the
// fleet-wide hold on an account with room before it is sent (its count written beside the claim); a session's own
// round trips (credit reservation and the rest) vary too much here to time, so its state calls are counted.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { memoryStores } from "../../src/state/memory.js";
import { delayedStores, type DelayedStores } from "../helpers/delayed-stores.js";

const DELAY = 100;
const RUNS = 5;

describe("sequential state round trips of a creation with upstream accounts", () => {
  let emu: EmulatorHandle;
  let gw: RunningGateway;
  let state: DelayedStores;
  let key: string;

  beforeAll(async () => {
    emu = await startEmulator({ modules: ["sessions"], accounts: [{ id: "a" }, { id: "b" }] });
    key = generateTenantKey();
    const config = parseConfig({
      server: { host: "127.0.0.1", port: 0, logLevel: "error" },
      upstream: {
        baseUrl: emu.controlUrl,
        allowedHosts: [new URL(emu.controlUrl).host],
        accounts: [
          { id: "a", apiKeyEnv: "KEY_A", limits: { sessions: 100 } },
          { id: "b", apiKeyEnv: "KEY_B", limits: { sessions: 100 } },
        ],
      },
      payments: { enabled: false },
      tenants: [{ id: "rt", scopes: ["sessions"], keys: [{ hash: await hashTenantKey(key) }] }],
    });
    state = delayedStores(memoryStores());
    gw = await startNodeGateway({
      config,
      secrets: {
        tokenSecret: randomBytes(32).toString("hex"),
        accountApiKeys: { a: emu.accounts.get("a")!.apiKey, b: emu.accounts.get("b")!.apiKey },
      },
      deps: { stores: state.stores },
      logSink: () => {},
    });
  }, 60_000);

  afterAll(async () => {
    await gw?.close();
    await emu?.close();
  });

  const create = async (path: string, body: unknown) => {
    const r = await fetch(`${gw.url}${path}`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const text = await r.text();
    expect(r.status, text.slice(0, 200)).toBe(200);
  };

  const roundTrips = async (run: (i: number) => Promise<void>) => {
    const timed = async (i: number) => {
      const t = performance.now();
      await run(i);
      const ms = performance.now() - t;
      await new Promise((r) => setTimeout(r, 50));
      return ms;
    };
    state.setDelay(0);
    for (let i = 0; i < 2; i++) await timed(1000 + i);
    const near: number[] = [];
    for (let i = 0; i < RUNS; i++) near.push(await timed(i));
    state.setDelay(DELAY);
    const far: number[] = [];
    for (let i = 0; i < RUNS; i++) far.push(await timed(100 + i));
    state.setDelay(0);
    return Math.max(0, Math.round((Math.min(...far) - Math.min(...near)) / DELAY));
  };

  it("a profile waits for one: the claim, with the custody record beside it", async () => {
    const profile = await roundTrips((i) => create("/api/profile", { name: `rt-${i}` }));
    console.log(`state round trips of a profile creation with accounts: ${profile}`);
    expect(profile).toBeLessThanOrEqual(1);
  }, 120_000);

  it("a session on accounts with limits adds one hold before it is sent, and counts it beside the claim", async () => {
    state.reset();
    await create("/api/session", {});
    const calls = state.calls();
    expect(calls["accountSlots.take"]).toBe(1);
    expect(calls["accountSlots.settle"]).toBe(1);
    expect(calls["ownership.claim"]).toBe(1);
    // The account's custody record and the credit hold's record, both beside the claim.
    expect(calls["kv.setIfAbsent"]).toBe(2);
    expect(calls["kv.set"] ?? 0).toBeLessThanOrEqual(2);
  }, 60_000);
});
