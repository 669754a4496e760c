// Starts a throwaway redis-server on 127.0.0.1 (free port, no persistence) in its own process; stops it by PID.
import { spawn, type ChildProcess } from "node:child_process";
import { freePort } from "../helpers/free-port.js";

export interface RedisServer {
  url: string;
  port: number;
  pid: number;
  /** SIGTERM by PID (SIGKILL after 3 s) and wait for the exit. */
  stop(): Promise<void>;
}

/** `port` reuses a port, to bring a stopped server back where clients expect it. */
export async function startRedisServer(port?: number): Promise<RedisServer> {
  const p = port ?? (await freePort());
  const child: ChildProcess = spawn(
    "redis-server",
    ["--port", String(p), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "yes"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start on ${p}:\n${out}`)), 10_000);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("Ready to accept connections")) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited with ${code}:\n${out}`));
    });
  });
  const pid = child.pid!;
  return {
    url: `redis://127.0.0.1:${p}`,
    port: p,
    pid,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      process.kill(pid, "SIGTERM");
      const kill = setTimeout(() => child.exitCode === null && process.kill(pid, "SIGKILL"), 3000);
      await exited;
      clearTimeout(kill);
    },
  };
}
