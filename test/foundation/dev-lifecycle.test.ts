// No child outlives the stack: `tollgate dev` / `tollgate emulator` ended every way a user, a supervisor or the kernel
// ends them (Ctrl-C, SIGTERM, SIGKILL of the process group, SIGKILL of the parent alone) leave no process behind —
// not the anvil chain, not a session's browser, not a sandbox — and no sandbox disk or lxcfs mount.
import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { existsSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { Hyperbrowser } from "@hyperbrowser/sdk";

/** Every descendant of a PID, from /proc (detached children keep their parent while it lives). */
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

/** A PID still running (a zombie is dead, waiting for its reaper), and which program it is, for failure messages. */
function living(pids: number[]): string[] {
  const out: string[] = [];
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (!/\) [ZX] /.test(stat)) out.push(`${pid} ${stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"))}`);
    } catch {
      /* gone */
    }
  }
  return out;
}

const cmdline = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  } catch {
    return [];
  }
};

const mountsUnder = (dir: string) =>
  readFileSync("/proc/mounts", "utf8")
    .split("\n")
    .filter((l) => l.split(" ")[1]?.startsWith(dir));

type Way = "SIGINT" | "SIGTERM" | "SIGKILL of the group" | "SIGKILL of the parent alone";

function end(pid: number, way: Way) {
  if (way === "SIGINT" || way === "SIGTERM") process.kill(pid, way);
  else if (way === "SIGKILL of the group") process.kill(-pid, "SIGKILL");
  else process.kill(pid, "SIGKILL");
}

async function startCli(args: string[]) {
  // detached: the CLI leads a process group of its own, as under a shell's job control or a supervisor.
  const child = spawn(process.execPath, ["bin/tollgate.js", ...args], { stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err = (err + d).slice(-4000)));
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`not ready in 90 s:\n${err}`)), 90_000);
    child.stdout.on("data", () => out.includes("\n") && (clearTimeout(t), resolve()));
    child.once("exit", (c) => (clearTimeout(t), reject(new Error(`exited ${c}:\n${err}`))));
  });
  return { child, info: JSON.parse(out.trim().split("\n")[0]!) };
}

/** Waits until none of `pids` lives (up to 20 s on a loaded machine), then answers which still do. */
async function survivors(pids: number[]): Promise<string[]> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline && living(pids).length > 0) await new Promise((r) => setTimeout(r, 100));
  return living(pids);
}

/** The emulator's state directory, from the lxcfs it runs (its mount point lives there). */
function stateDirOf(pids: number[]): string | undefined {
  for (const pid of pids) {
    const argv = cmdline(pid);
    if (argv[0]?.endsWith("lxcfs")) return argv.at(-1)?.replace(/\/lxcfs$/, "");
  }
  return undefined;
}

describe("no child outlives `tollgate dev`", () => {
  const ways: Way[] = ["SIGINT", "SIGTERM", "SIGKILL of the group", "SIGKILL of the parent alone"];
  for (const way of ways) {
    it(`${way}: the chain, a session's browser and a sandbox all end with it`, async () => {
      const { child, info } = await startCli(["dev", "--json"]);
      try {
        const hb = new Hyperbrowser({ apiKey: info.tenants.acme, baseUrl: info.gateway.replace("127.0.0.1", "localhost") });
        const sbx = await hb.sandboxes.create({ imageName: "node" });
        expect((await sbx.exec("echo up")).stdout.trim()).toBe("up");
        const session = await hb.sessions.create();
        expect(session.id).toBeTruthy();
        const kids = descendants(child.pid!);
        const names = kids.map((p) => cmdline(p)[0] ?? "");
        // What must end: anvil, Chromium, bubblewrap (and the sandbox's processes below it).
        expect(names.some((n) => n.endsWith("/anvil"))).toBe(true);
        expect(names.some((n) => /chrom/.test(n))).toBe(true);
        expect(names.some((n) => n.endsWith("/bwrap"))).toBe(true);
        const stateDir = stateDirOf(kids);
        // With LXCFS installed (scripts/setup.sh), its mount and the sandbox's disk are there to be cleaned up.
        if (existsSync("/usr/bin/lxcfs")) expect(mountsUnder(stateDir ?? "/nowhere").length).toBeGreaterThanOrEqual(2);
        end(child.pid!, way);
        expect(await survivors([child.pid!, ...kids])).toEqual([]);
        if (stateDir) {
          const deadline = Date.now() + 10_000;
          while (Date.now() < deadline && mountsUnder(stateDir).length > 0) await new Promise((r) => setTimeout(r, 100));
          expect(mountsUnder(stateDir)).toEqual([]);
          // And the state directory (sandbox roots, disk images) is gone with them.
          while (Date.now() < deadline && existsSync(stateDir)) await new Promise((r) => setTimeout(r, 100));
          expect(existsSync(stateDir)).toBe(false);
        }
        if (info.logFile) rmSync(info.logFile, { force: true });
      } finally {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          /* gone */
        }
      }
    }, 180_000);
  }
});

describe("no child outlives `tollgate emulator`", () => {
  for (const way of ["SIGKILL of the group", "SIGKILL of the parent alone"] as const) {
    it(`${way}: the chain and a sandbox end with it`, async () => {
      const { child, info } = await startCli(["emulator", "--json"]);
      try {
        const hb = new Hyperbrowser({ apiKey: info.apiKey, baseUrl: info.upstream });
        const sbx = await hb.sandboxes.create({ imageName: "node" });
        expect((await sbx.exec("echo up")).stdout.trim()).toBe("up");
        const kids = descendants(child.pid!);
        expect(kids.map((p) => cmdline(p)[0] ?? "").some((n) => n.endsWith("/anvil"))).toBe(true);
        const stateDir = stateDirOf(kids);
        // With LXCFS installed (scripts/setup.sh), its mount and the sandbox's disk are there to be cleaned up.
        if (existsSync("/usr/bin/lxcfs")) expect(mountsUnder(stateDir ?? "/nowhere").length).toBeGreaterThanOrEqual(2);
        end(child.pid!, way);
        expect(await survivors([child.pid!, ...kids])).toEqual([]);
        if (stateDir) {
          const deadline = Date.now() + 10_000;
          while (Date.now() < deadline && mountsUnder(stateDir).length > 0) await new Promise((r) => setTimeout(r, 100));
          expect(mountsUnder(stateDir)).toEqual([]);
          // And the state directory (sandbox roots, disk images) is gone with them.
          while (Date.now() < deadline && existsSync(stateDir)) await new Promise((r) => setTimeout(r, 100));
          expect(existsSync(stateDir)).toBe(false);
        }
      } finally {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          /* gone */
        }
      }
    }, 180_000);
  }
});

describe("no child outlives `tollgate dev --worker`", () => {
  it("SIGKILL of the parent alone: wrangler's tree (npx, node, workerd) and the chain end with it", async () => {
    const { child, info } = await startCli(["dev", "--worker", "--json"]);
    try {
      const search = await fetch(`${info.gateway}/x402/web/search`, {
        method: "POST",
        headers: { "x-api-key": info.tenants.acme, "content-type": "application/json" },
        body: JSON.stringify({ query: "electric vehicle charging" }),
      });
      expect(search.status).toBe(200);
      const kids = descendants(child.pid!);
      const names = kids.map((p) => cmdline(p).join(" "));
      expect(names.some((n) => /workerd/.test(n))).toBe(true);
      expect(names.some((n) => /\/anvil/.test(n))).toBe(true);
      // wrangler's env file holds the dev wallet's key: its directory goes with the parent too.
      const envDir = names.map((n) => / --env-file (\S+)\/\.env\b/.exec(n)?.[1]).find(Boolean);
      expect(envDir && existsSync(join(envDir, ".env"))).toBe(true);
      end(child.pid!, "SIGKILL of the parent alone");
      expect(await survivors([child.pid!, ...kids])).toEqual([]);
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && existsSync(envDir!)) await new Promise((r) => setTimeout(r, 100));
      expect(existsSync(envDir!)).toBe(false);
      if (info.logFile) rmSync(info.logFile, { force: true });
    } finally {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        /* gone */
      }
    }
  }, 240_000);
});
