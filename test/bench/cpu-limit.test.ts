// bench/cpu-limit.ts: a process in a CPU-limited cgroup of its own uses no more than its fraction of a core, and the
// group is gone once released. Skipped where cgroups cannot be written (not root, no cpu controller).
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { cpuLimitUnavailable, limitCpu, processCpuSeconds } from "../../bench/cpu-limit.js";

const why = await cpuLimitUnavailable();
const children: ChildProcess[] = [];

/** A process that spins on one core until killed. */
function busy(): ChildProcess {
  const child = spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" });
  children.push(child);
  return child;
}

async function cpuOver(pid: number, ms: number): Promise<number> {
  const from = await processCpuSeconds(pid);
  const started = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  return ((await processCpuSeconds(pid)) - from) / ((performance.now() - started) / 1000);
}

afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill("SIGKILL");
      await new Promise((r) => c.once("exit", r));
    }
  }
});

describe.skipIf(why !== undefined)(`limitCpu${why ? ` (skipped: ${why})` : ""}`, () => {
  it("holds a spinning process to its fraction of a core, and counts the periods it was throttled", async () => {
    const child = busy();
    const limit = await limitCpu(child.pid!, 0.2);
    expect(limit).toBeDefined();
    try {
      const used = await cpuOver(child.pid!, 2000);
      expect(used).toBeLessThanOrEqual(0.3);
      // A spinning process is at its limit whenever the host gives it the chance: well above half of it here.
      expect(used).toBeGreaterThan(0.05);
      expect((await limit!.throttling()).throttled).toBeGreaterThan(0);
    } finally {
      await limit!.release();
    }
    expect(existsSync(limit!.path)).toBe(false);
  });

  it("gives each process a group of its own, and removes a group whose process has already exited", async () => {
    const a = busy();
    const b = busy();
    const la = (await limitCpu(a.pid!, 0.1))!;
    const lb = (await limitCpu(b.pid!, 0.1))!;
    expect(la.path).not.toBe(lb.path);
    a.kill("SIGKILL");
    await new Promise((r) => a.once("exit", r));
    await la.release();
    await lb.release();
    await lb.release();
    expect(existsSync(la.path)).toBe(false);
    expect(existsSync(lb.path)).toBe(false);
  });
});
