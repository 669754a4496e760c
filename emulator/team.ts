// The team behind the emulator's API key: its id, and its credit balance at /api/team/credit-info, in whole credits
// (both SDKs' models: Python's TeamCreditInfo takes integers only, Node's numbers): the usage is the meter's running
// total rounded up, a started credit counting as used, and what remains is the limit less that.
import { Hono } from "hono";
import { requireApiKey } from "./auth.js";
import type { EmulatorContext, EmulatorModule } from "./types.js";

/** The one team the emulator's API key belongs to. */
export const TEAM_ID = "team_emulator";

/** Credits the team may use (what the emulator charges is in ./credits.ts). */
export const TEAM_CREDIT_LIMIT = 1_000_000;

export interface TeamCreditInfo {
  usage: number;
  limit: number;
  remaining: number;
}

/** The `team` module: control-plane routes only; the usage is the team's credit meter's (0 without one). */
export function createTeamModule(ctx: EmulatorContext, opts: { limit?: number; usage?: () => number } = {}): EmulatorModule {
  const limit = opts.limit ?? TEAM_CREDIT_LIMIT;
  // With several accounts, each key reads its own account's usage (./accounts.ts).
  const usage = opts.usage ?? (() => ctx.credits?.usage(ctx.accounts?.several ? ctx.accounts.currentAccount() : undefined) ?? 0);
  const control = new Hono();
  control.use("/api/team/*", requireApiKey(ctx));
  control.get("/api/team/credit-info", (c) => {
    // The meter keeps thousandths; a hair above a whole number from float sums (3.0000000001) is that number.
    const used = Math.ceil(Math.round(usage() * 1000) / 1000);
    return c.json({ usage: used, limit, remaining: Math.max(0, limit - used) } satisfies TeamCreditInfo);
  });
  return { name: "team", control, async close() {} };
}
