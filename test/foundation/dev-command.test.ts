import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { readFileSync, readdirSync, rmSync } from "node:fs";

/** Every descendant of a PID, from /proc (detached children keep their parent). */
function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      /* exited */
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [pid, pp] of parent)
      if (pp === p) {
        out.push(pid);
        walk(pid);
      }
  };
  walk(root);
  return out;
}

const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/\) Z /.test(stat);
  } catch {
    return false;
  }
};

describe("`tollgate dev --json` (the one-command start)", () => {
  it("prints exactly one JSON line once ready, serves a paid search with a demo key, and stops everything on Ctrl-C", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/cli/index.ts", "dev", "--json"], {
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    const started = Date.now();
    try {
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`not ready in 60 s:\n${err}`)), 60_000);
        child.stdout.on("data", () => out.includes("\n") && (clearTimeout(t), resolve()));
        child.once("exit", (c) => reject(new Error(`exited ${c}:\n${err}`)));
      });
      console.log(`[dev] ready in ${Date.now() - started} ms`);
      const lines = out.trim().split("\n");
      expect(lines).toHaveLength(1);
      const info = JSON.parse(lines[0]);
      expect(Object.keys(info).sort()).toEqual(["buyers", "chain", "gateway", "logFile", "runtime", "tenants", "upstream"]);
      expect(Object.keys(info.tenants).sort()).toEqual(["acme", "globex", "initech", "ops"]);
      // A funded buyer wallet on the local chain, generated at run time (it buys from [sales]: test/sales/sales-dev.test.ts).
      expect(info.buyers.demo).toMatch(/^0x[0-9a-f]{64}$/);

      const r = await fetch(`${info.gateway}/x402/web/search`, {
        method: "POST",
        headers: { "x-api-key": info.tenants.acme, "content-type": "application/json" },
        body: JSON.stringify({ query: "electric vehicle charging" }),
      });
      expect(r.status).toBe(200);
      expect((await r.json()).data.results.length).toBeGreaterThan(0);
      expect(r.headers.get("x-tollgate-paid")).toBe("0.005");
      // globex is search-only: isolation is visible at once.
      const denied = await fetch(`${info.gateway}/api/sandboxes`, { headers: { "x-api-key": info.tenants.globex } });
      expect(denied.status).toBe(403);
      // Logs (the gateway's and the emulator's) go to the file named in the JSON line, never into stdout.
      let logs = "";
      for (let i = 0; i < 40 && !/x402\/web\/search/.test(logs); i++) {
        await new Promise((r) => setTimeout(r, 50));
        logs = readFileSync(info.logFile, "utf8");
      }
      expect(logs).toMatch(/x402\/web\/search/);
      expect(logs).toContain('"source":"emulator"');
      for (const key of [...Object.values(info.tenants), info.buyers.demo] as string[]) expect(logs).not.toContain(key);

      const kids = descendants(child.pid!);
      expect(kids.length).toBeGreaterThan(0);
      process.kill(child.pid!, "SIGINT");
      expect(await Promise.race([exited, new Promise((r) => setTimeout(() => r("timeout"), 20_000))])).toBe(0);
      await new Promise((r) => setTimeout(r, 500));
      expect(kids.filter(alive)).toEqual([]);
      expect(out.trim().split("\n")).toHaveLength(1);
      rmSync(info.logFile, { force: true });
    } finally {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        /* gone */
      }
    }
  }, 120_000);

  it("`tollgate emulator --json` runs the emulator alone and prints its URLs and API key once ready", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/cli/index.ts", "emulator", "--json", "--no-chain"], {
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    try {
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error("emulator not ready in 30 s")), 30_000);
        child.stdout.on("data", () => out.includes("\n") && (clearTimeout(t), resolve()));
      });
      const info = JSON.parse(out.trim());
      expect(Object.keys(info).sort()).toEqual(["allowedHost", "apiKey", "chain", "runtime", "token", "upstream", "wallet"]);
      expect(info).toMatchObject({ chain: null, wallet: null, token: null });
      const images = await fetch(`${info.upstream}/api/images`, { headers: { "x-api-key": info.apiKey } });
      expect(images.status).toBe(200);
      expect((await fetch(`${info.upstream}/api/images`)).status).toBe(401);
      process.kill(child.pid!, "SIGINT");
      expect(await Promise.race([exited, new Promise((r) => setTimeout(() => r("timeout"), 15_000))])).toBe(0);
    } finally {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        /* gone */
      }
    }
  }, 60_000);
});
