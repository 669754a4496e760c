// The watchdog behind "no child outlives the emulator": a process that registers a process group, a mount-free
// directory and then dies by SIGKILL leaves neither behind; a watchdog killed by hand is replaced at once.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const alive = (pid: number) => {
  try {
    return !/\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
};

const SCRIPT = `
const { spawn } = await import("node:child_process");
const { mkdtempSync } = await import("node:fs");
const r = await import(${JSON.stringify(new URL("../../emulator/reaper.ts", import.meta.url).pathname)});
const child = spawn("sleep", ["1000"], { detached: true, stdio: "ignore" });
r.guardGroup(child.pid);
const dir = mkdtempSync("/tmp/tollgate-reaper-test-");
r.guardDir(dir);
console.log(JSON.stringify({ sleep: child.pid, dir }));
setInterval(() => {}, 1000);
`;

async function until(ok: () => boolean, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && !ok()) await new Promise((r) => setTimeout(r, 50));
  return ok();
}

/** A process's command line; "" for one gone between listing and reading (the killed watchdog, being reaped). */
function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return "";
  }
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

describe("emulator/reaper.ts", () => {
  it("kills registered groups and deletes registered directories when the process is SIGKILLed, even after its watchdog was killed", async () => {
    const proc = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", SCRIPT], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let out = "";
        proc.stdout.on("data", (d) => {
          out += d;
          if (out.includes("\n")) resolve(out.split("\n")[0]!);
        });
        proc.once("exit", (c) => reject(new Error(`exited ${c}`)));
      });
      const { sleep, dir } = JSON.parse(line) as { sleep: number; dir: string };
      expect(alive(sleep)).toBe(true);
      expect(existsSync(dir)).toBe(true);
      // The watchdog is the /bin/sh child; kill it: a new one takes over.
      const shOf = () => childrenOf(proc.pid!).filter((p) => cmdline(p).startsWith("/bin/sh"));
      const [first] = shOf();
      expect(first).toBeGreaterThan(0);
      process.kill(first!, "SIGKILL");
      expect(await until(() => shOf().length === 1 && shOf()[0] !== first)).toBe(true);
      process.kill(proc.pid!, "SIGKILL");
      expect(await until(() => !alive(sleep) && !existsSync(dir))).toBe(true);
    } finally {
      if (proc.exitCode === null) proc.kill("SIGKILL");
    }
  }, 60_000);
});
