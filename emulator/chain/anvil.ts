// Runs the anvil binary from npm as a child in its own process group, on loopback, and finds the port it bound.
import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { guardGroup, releaseGroup } from "../reaper.js";

export interface AnvilProcess {
  pid: number;
  rpcUrl: string;
  port: number;
  stop(): Promise<void>;
}

export interface AnvilOptions {
  host: string;
  /** 0 (the default) lets anvil pick a free port; the chosen one is read from its start-up line. */
  port?: number;
  chainId: number;
  /** Give up if anvil has not announced its port within this time. */
  startTimeoutMs?: number;
}

/** Locates `bin/anvil` inside the platform package the `@foundry-rs/anvil` wrapper depends on. */
export function anvilBinary(): string {
  const require = createRequire(import.meta.url);
  const platformPkg = `@foundry-rs/anvil-${process.platform}-${process.arch === "x64" ? "amd64" : process.arch}`;
  const candidates: string[] = [];
  for (const pkg of [platformPkg, "@foundry-rs/anvil"]) {
    try {
      const dir = dirname(require.resolve(`${pkg}/package.json`));
      candidates.push(join(dir, "bin", "anvil"), join(dir, "bin", "anvil.exe"));
    } catch {
      /* not installed; try the next */
    }
  }
  const found = candidates.find((p) => existsSync(p));
  if (!found) {
    throw new Error(`anvil binary not found (looked in ${platformPkg} and @foundry-rs/anvil). Run \`npm ci\` without --omit=optional.`);
  }
  return found;
}

const LISTENING = /Listening on ([\d.:[\]a-fA-F]+):(\d+)/;

/**
 * Starts anvil. With port 0 anvil must print its banner to say which port it took, so `--silent` is only used when
 * the port is fixed; otherwise stdout is read up to the "Listening on" line and then drained unread.
 */
export async function startAnvil(opts: AnvilOptions): Promise<AnvilProcess> {
  const port = opts.port ?? 0;
  const args = ["--host", opts.host, "--port", String(port), "--chain-id", String(opts.chainId), "--accounts", "1", "--hardfork", "cancun"];
  if (port !== 0) args.push("--silent");
  const child = spawn(anvilBinary(), args, { detached: true, stdio: ["ignore", "pipe", "pipe"] });
  const pid = child.pid;
  if (!pid) throw new Error("anvil failed to start (no pid)");
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-pid, signal);
    } catch {
      /* already gone */
    }
  };
  // If this Node process exits without close(), do not leave anvil behind.
  const onExit = () => killGroup("SIGKILL");
  process.once("exit", onExit);
  // Nor if it is killed outright (SIGKILL of it or of its process group): the watchdog ends anvil's group then.
  guardGroup(pid);
  child.once("exit", () => releaseGroup(pid));

  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => {
    if (stderr.length < 4000) stderr += d;
  });

  try {
    const boundPort = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`anvil did not start within ${opts.startTimeoutMs ?? 15000} ms`)),
        opts.startTimeoutMs ?? 15000,
      );
      const fail = (why: string) => {
        clearTimeout(timer);
        reject(new Error(`anvil ${why}${stderr ? `: ${stderr.trim()}` : ""}`));
      };
      child.once("error", (e) => fail(`could not be spawned (${e.message})`));
      child.once("exit", (code, sig) => fail(`exited during start-up (code ${code}, signal ${sig})`));
      if (port !== 0) {
        void waitForRpc(`http://${opts.host}:${port}`, opts.startTimeoutMs ?? 15000).then(
          () => {
            clearTimeout(timer);
            resolve(port);
          },
          (e) => fail(String(e)),
        );
        child.stdout!.resume();
        return;
      }
      let out = "";
      const onData = (d: string) => {
        out += d;
        const m = LISTENING.exec(out);
        if (m) {
          clearTimeout(timer);
          child.stdout!.off("data", onData);
          child.stdout!.resume(); // request logs follow; nobody reads them
          child.stdout!.on("data", () => {});
          resolve(Number(m[2]));
        } else if (out.length > 64_000) out = out.slice(-4000);
      };
      child.stdout!.setEncoding("utf8").on("data", onData);
    });
    child.removeAllListeners("exit");
    child.removeAllListeners("error");
    child.on("error", () => {});
    const rpcUrl = `http://${opts.host}:${boundPort}`;
    return { pid, port: boundPort, rpcUrl, stop: () => stopGroup(child, pid, onExit) };
  } catch (err) {
    await stopGroup(child, pid, onExit);
    throw err;
  }
}

async function stopGroup(child: ChildProcess, pid: number, onExit: () => void): Promise<void> {
  process.off("exit", onExit);
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  try {
    process.kill(-pid, "SIGTERM");
  } catch {
    return;
  }
  const timer = setTimeout(() => {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      /* gone */
    }
  }, 3000);
  await exited;
  clearTimeout(timer);
}

async function waitForRpc(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
      });
      if (res.ok) return;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`did not answer on ${url}`);
}
