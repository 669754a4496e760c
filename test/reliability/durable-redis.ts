// A redis-server that keeps its data across a crash (append-only file, fsync on every write), on a fixed port, so a
// test can SIGKILL it under load and bring it back where the gateway expects it, with its ledger intact.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../helpers/free-port.js";

export interface DurableRedis {
  url: string;
  pid(): number;
  /** SIGKILL by PID (a crash), and wait for the exit. */
  crash(): Promise<void>;
  /** Start again on the same port and data directory. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export async function startDurableRedis(): Promise<DurableRedis> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), "tg-redis-"));
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const launch = async () => {
    const c = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "yes", "--appendfsync", "always"],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    child = c;
    exited = new Promise<void>((r) => c.once("exit", () => r()));
    let out = "";
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`redis-server did not start:\n${out}`)), 10_000);
      c.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("Ready to accept connections")) {
          clearTimeout(timer);
          resolve();
        }
      });
      c.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`redis-server exited with ${code}:\n${out}`));
      });
    });
  };
  const kill = async (sig: NodeJS.Signals) => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    process.kill(child.pid!, sig);
    await exited;
  };
  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: () => child!.pid!,
    crash: () => kill("SIGKILL"),
    restart: launch,
    async stop() {
      await kill("SIGTERM");
      await rm(dir, { recursive: true, force: true });
    },
  };
}
