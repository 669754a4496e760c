// `tollgate dev --worker`: the emulator and chain in Node, the gateway as the Worker under `wrangler dev` (workerd).
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { guardDir, guardGroup, releaseDir, releaseGroup, startEmulator, type EmulatorHandle } from "@tollgate/emulator";
import { demoConfig, type DemoKeys } from "./dev-stack.js";
import { generateTenantKey } from "../identity/tenants.js";

export interface WorkerDev {
  gateway: string;
  emulator: EmulatorHandle;
  tenants: DemoKeys;
  close(): Promise<void>;
}

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, host, () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

/** One dotenv line; single quotes keep the config's JSON literal (dotenv does not unescape inside them). */
const envLine = (k: string, v: string) => {
  if (v.includes("'") || v.includes("\n")) throw new Error(`${k}: value cannot be written to a dotenv file`);
  return `${k}='${v}'`;
};

export interface WorkerDevOptions {
  host?: string;
  port?: number;
  progress?: (m: string) => void;
  /** Receives log lines: the emulator's events and, once ready, wrangler's output (the Worker's own log lines). */
  log?: (line: string) => void;
}

export async function startWorkerDev(opts: WorkerDevOptions = {}): Promise<WorkerDev> {
  const host = opts.host ?? "127.0.0.1";
  const progress = opts.progress ?? (() => {});
  const log = opts.log;
  progress("starting the local chain and the emulator…");
  const emulator = await startEmulator({
    host,
    log: log ? (event, fields) => log(JSON.stringify({ ts: new Date().toISOString(), source: "emulator", event, ...fields })) : undefined,
  });
  // wrangler's env file (the dev wallet's key, the upstream key, the token secret) and its local state: deleted on stop,
  // and by the emulator's watchdog if this process ends any other way (a SIGKILL included).
  const dir = await mkdtemp(join(tmpdir(), "tollgate-wrangler-"));
  guardDir(dir);
  let child: ChildProcess | undefined;
  const stop = async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child!.once("exit", r));
      try {
        process.kill(-child.pid!, "SIGTERM");
      } catch {
        /* gone */
      }
      const t = setTimeout(() => {
        try {
          process.kill(-child!.pid!, "SIGKILL");
        } catch {
          /* gone */
        }
      }, 5000);
      await exited;
      clearTimeout(t);
    }
    await emulator.close();
    await rm(dir, { recursive: true, force: true });
    releaseDir(dir);
  };
  try {
    const wallet = await emulator.chain!.createFundedWallet(100_000_000n);
    const tenants = { acme: generateTenantKey(), initech: generateTenantKey(), globex: generateTenantKey(), ops: generateTenantKey() };
    const port = opts.port || (await freePort(host));
    // Sandboxes reach the Worker as real ones reach the internet: its $TOLLGATE_EGRESS works from inside them.
    emulator.internet.add(`localhost:${port}`);
    const config = await demoConfig(emulator, tenants, { logLevel: "info" });
    config.state = { backend: "durable-objects" };
    const envFile = join(dir, ".env");
    await writeFile(
      envFile,
      [
        envLine("TOLLGATE_CONFIG", JSON.stringify(config)),
        envLine("TOLLGATE_UPSTREAM_API_KEY", emulator.apiKey),
        envLine("TOLLGATE_WALLET_KEY", wallet.privateKey),
        envLine("TOLLGATE_TOKEN_SECRET", randomBytes(32).toString("hex")),
      ].join("\n") + "\n",
      { mode: 0o600 },
    );
    progress("starting the Worker with wrangler dev…");
    child = spawn(
      "npx",
      ["wrangler", "dev", "--local", "--ip", host, "--port", String(port), "--env-file", envFile, "--persist-to", join(dir, "state")],
      {
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
        env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" },
      },
    );
    // wrangler's tree (npx, node, workerd ×2) ends with this process however it ends, as the emulator's children do.
    guardGroup(child.pid);
    const started = child;
    started.once("exit", () => releaseGroup(started.pid));
    let out = "";
    let ready = false;
    let partial = "";
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`wrangler dev did not become ready in 60 s:\n${out.slice(-2000)}`)), 60_000);
      const onData = (d: Buffer) => {
        if (ready) {
          if (!log) return;
          const lines = (partial + d.toString()).split("\n");
          partial = lines.pop()!;
          for (const line of lines) if (line.trim()) log(JSON.stringify({ ts: new Date().toISOString(), source: "worker", line }));
          return;
        }
        out += d;
        if (/Ready on http/.test(out)) {
          ready = true;
          out = "";
          clearTimeout(t);
          resolve();
        }
      };
      child!.stdout!.on("data", onData);
      child!.stderr!.on("data", onData);
      child!.once("exit", (code) => {
        clearTimeout(t);
        reject(new Error(`wrangler dev exited with ${code}:\n${out.slice(-2000)}`));
      });
    });
    return { gateway: `http://${host}:${port}`, emulator, tenants, close: stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
