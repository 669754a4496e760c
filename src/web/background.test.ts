import { describe, expect, it } from "vitest";
import type { Context } from "hono";
import { BackgroundWork } from "./background.js";
import { Logger, Redactor } from "../log.js";

const SECRET = "sk_live_background_secret_0123456789";

function work() {
  const lines: string[] = [];
  const logger = new Logger((l) => lines.push(l), "info", new Redactor().add(SECRET));
  return { lines, background: new BackgroundWork(logger) };
}

const later = <T>(ms: number, v?: T) => new Promise<T | undefined>((r) => setTimeout(() => r(v), ms));

describe("BackgroundWork", () => {
  it("logs a failure by what it was, with secrets redacted, instead of leaving it unhandled", async () => {
    const { lines, background } = work();
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on("unhandledRejection", onUnhandled);
    try {
      background.run(undefined, Promise.reject(new Error(`receiver said no to ${SECRET}`)), "budget alert webhook delivery");
      expect(await background.settled(1000)).toBe(0);
      await later(10);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
    expect(unhandled).toEqual([]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("budget alert webhook delivery");
    expect(lines[0]).not.toContain(SECRET);
  });

  it("waits for work still running, work it starts included, and gives up after the bound", async () => {
    const { background } = work();
    const done: string[] = [];
    background.run(
      undefined,
      later(50).then(() => {
        done.push("outer");
        background.run(
          undefined,
          later(50).then(() => done.push("inner")),
          "inner",
        );
      }),
      "outer",
    );
    expect(await background.settled(2000)).toBe(0);
    expect(done).toEqual(["outer", "inner"]);

    background.run(undefined, later(5000), "slow");
    const t0 = Date.now();
    expect(await background.settled(100)).toBe(1);
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it("hands work to the request's waitUntil when there is one, and copes with a context without one", async () => {
    const { background } = work();
    const handed: Promise<unknown>[] = [];
    const withCtx = { executionCtx: { waitUntil: (p: Promise<unknown>) => handed.push(p) } } as unknown as Context;
    const withoutCtx = {
      get executionCtx(): never {
        throw new Error("This context has no ExecutionContext");
      },
    } as unknown as Context;
    background.run(withCtx, Promise.reject(new Error("x")), "with");
    background.run(withoutCtx, Promise.resolve(), "without");
    expect(handed).toHaveLength(1);
    await expect(handed[0]).resolves.toBeUndefined(); // what waitUntil gets never rejects
    expect(await background.settled(1000)).toBe(0);
  });
});
