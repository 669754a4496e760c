// Extending a browser session grows the session's own credits hold (the unmodified SDK, the emulator, real Chromium):
// one settlement for the minutes used, a 402 before the upstream sees an extension the budget cannot take, exactly one
// of two concurrent extensions on a budget for one, and an expiry that waits for the new end time.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";
import type { LedgerEntry } from "../../src/state/types.js";

const MIN = 60_000;
/** The default sessionMinute price, $0.0017, in atomic units. */
const RATE = 1700n;

describe("session extensions grow the session's credits hold", () => {
  let stack: SessionGateway;
  let acme: Hyperbrowser;
  let tight: Hyperbrowser;
  /** The emulator itself, with the operator's key: what the upstream really holds. */
  let upstream: Hyperbrowser;
  /** The gateway's clock, moved by hand: minutes used are then exact. */
  // Today's noon (UTC): the tests move it on by minutes, and a start near midnight would carry the settled minutes into
  // the next day's budget window.
  let clock = Date.now() - (Date.now() % 86_400_000) + 12 * 3_600_000;

  beforeAll(async () => {
    stack = await startSessionGateway(
      [
        { id: "acme", budget: { daily: "1" } },
        // A 5-minute session (8500) and one 5-minute extension (8500): $0.017 exactly.
        { id: "tight", budget: { daily: "0.017" } },
      ],
      // The emulator charges no browser time here, so stops settle from the table's estimate for the minutes run on
      // the gateway's hand-moved clock (test/gateway/credit-settlement.test.ts covers the upstream's own figures).
      { now: () => clock, emulatorCredits: { browserMinute: 0 } },
    );
    acme = new Hyperbrowser({ apiKey: stack.keys.acme!, baseUrl: stack.gateway.url });
    tight = new Hyperbrowser({ apiKey: stack.keys.tight!, baseUrl: stack.gateway.url });
    upstream = new Hyperbrowser({ apiKey: stack.emulator.apiKey, baseUrl: stack.emulator.controlUrl });
  });

  afterAll(async () => {
    await stack?.close();
  });

  const ledger = () => stack.gateway.gateway.services.stores.ledger;
  const creditsOf = (tenant: string) => ledger().list({ tenant, kind: "credits" });
  const holdOf = async (tenant: string, id: string): Promise<LedgerEntry[]> => ledger().list({ tenant, resource: `session:${id}` });
  /** When the upstream session ends (its token expires with it), unix seconds. */
  async function upstreamEnd(id: string): Promise<number> {
    const token = (await upstream.sessions.get(id)).token;
    return JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()).exp;
  }

  it("settles an extended session once, for the minutes it ran, not its creation hold plus the extension", async () => {
    const before = await creditsOf("acme");
    const session = await acme.sessions.create({ timeoutMinutes: 10 });
    const end = await upstreamEnd(session.id);
    expect((await acme.sessions.extendSession(session.id, 20)).success).toBe(true);
    expect(await upstreamEnd(session.id)).toBe(end + 20 * 60);

    const [hold, ...others] = await holdOf("acme", session.id);
    expect(others).toEqual([]);
    expect(hold).toMatchObject({ state: "reserved", amount: (30n * RATE).toString(), route: "session.create" });

    clock += 7 * MIN;
    expect(await acme.sessions.stop(session.id)).toEqual({ success: true });
    const settled = await holdOf("acme", session.id);
    expect(settled).toHaveLength(1);
    expect(settled[0]).toMatchObject({
      id: hold!.id,
      state: "committed",
      amount: (7n * RATE).toString(),
      reservedAmount: (30n * RATE).toString(),
    });
    // Nothing else was charged: no entry for the extension itself.
    expect((await creditsOf("acme")).length - before.length).toBe(1);
    expect((await ledger().usage("acme", clock)).byKind.credits.daily).toBe(7n * RATE);
  }, 60_000);

  it("lets exactly one of two concurrent extensions through on a budget for one, and refuses the next with 402 before the upstream sees it", async () => {
    const session = await tight.sessions.create({ timeoutMinutes: 5 });
    const end = await upstreamEnd(session.id);

    const results = await Promise.allSettled([tight.sessions.extendSession(session.id, 5), tight.sessions.extendSession(session.id, 5)]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const refused = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(refused.reason).toMatchObject({ statusCode: 402 });
    expect(await upstreamEnd(session.id)).toBe(end + 5 * 60);
    expect(await holdOf("tight", session.id)).toMatchObject([{ state: "reserved", amount: (10n * RATE).toString() }]);

    // The budget is all held now: one more minute is refused, and the upstream session keeps its timeout.
    const over = await fetch(`${stack.gateway.url}/api/session/${session.id}/extend-session`, {
      method: "PUT",
      headers: { "x-api-key": stack.keys.tight!, "content-type": "application/json" },
      body: JSON.stringify({ durationMinutes: 1 }),
    });
    expect(over.status).toBe(402);
    expect(await over.json()).toMatchObject({ code: "budget_exceeded", window: "daily", limit: "0.017" });
    expect(await upstreamEnd(session.id)).toBe(end + 5 * 60);

    clock += 3 * MIN;
    await tight.sessions.stop(session.id);
    expect(await creditsOf("tight")).toMatchObject([{ state: "committed", amount: (3n * RATE).toString() }]);
    expect((await ledger().usage("tight", clock)).daily).toBe(3n * RATE);
  }, 60_000);

  it("gives an extension back when the upstream refuses it (the session already ended upstream)", async () => {
    const session = await acme.sessions.create({ timeoutMinutes: 10 });
    const [held] = await holdOf("acme", session.id);
    await upstream.sessions.stop(session.id);
    await expect(acme.sessions.extendSession(session.id, 15)).rejects.toMatchObject({ statusCode: 409 });
    expect(await holdOf("acme", session.id)).toMatchObject([
      { id: held!.id, state: "reserved", amount: held!.amount, validBefore: held!.validBefore },
    ]);
    clock += 2 * MIN;
    expect((await acme.sessions.get(session.id)).status).toBe("closed"); // seen closed: settled
    expect(await holdOf("acme", session.id)).toMatchObject([{ state: "committed", amount: (2n * RATE).toString() }]);
  }, 60_000);

  it("commits an extended session that was never stopped in full only after its new end time", async () => {
    const start = clock;
    const session = await acme.sessions.create({ timeoutMinutes: 1 });
    await acme.sessions.extendSession(session.id, 2);
    const [hold] = await holdOf("acme", session.id);
    // Created with 1 minute (+5 of grace) and extended by 2: the hold ends 8 minutes in.
    expect(hold).toMatchObject({ amount: (3n * RATE).toString(), validBefore: Math.floor((start + 8 * MIN) / 1000) });
    const reconciler = stack.gateway.gateway.reconciler;

    clock = start + 6 * MIN + 10_000; // past the end the creation alone named
    await reconciler.runOnce();
    expect(await holdOf("acme", session.id)).toMatchObject([{ state: "reserved" }]);

    clock = start + 8 * MIN + 10_000;
    await reconciler.runOnce();
    const [expired] = await holdOf("acme", session.id);
    expect(expired).toMatchObject({ id: hold!.id, state: "committed", amount: (3n * RATE).toString() });
    expect(expired).not.toHaveProperty("reservedAmount");
    // The upstream still runs it (clocks disagree): an extension now has no open hold to grow, so it is its own
    // charge, linked to the session, and the stop changes neither.
    await acme.sessions.extendSession(session.id, 1);
    const [extension, first] = await holdOf("acme", session.id);
    expect(first).toEqual(expired);
    expect(extension).toMatchObject({
      route: "session.extend",
      state: "committed",
      amount: RATE.toString(),
      resource: `session:${session.id}`,
    });
    await acme.sessions.stop(session.id);
    expect(await holdOf("acme", session.id)).toEqual([extension, expired]);
  }, 60_000);
});
