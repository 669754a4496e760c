// Spawns sandbox-gateway-process.ts in its own process group and reads its resident memory from /proc.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export interface ChildGateway {
  pid: number;
  port: number;
  rssBytes(): number;
  stop(): Promise<void>;
}

export async function spawnGateway(config: Record<string, unknown>, secrets: Record<string, unknown>): Promise<ChildGateway> {
  const script = fileURLToPath(new URL("./sandbox-gateway-process.ts", import.meta.url));
  // TOLLGATE_CHILD_NODE_ARGS (e.g. "--cpu-prof") lets a benchmark profile the gateway process.
  const extra = (process.env.TOLLGATE_CHILD_NODE_ARGS ?? "").split(" ").filter(Boolean);
  const child: ChildProcess = spawn(process.execPath, [...extra, "--import", "tsx", script], {
    env: { ...process.env, TOLLGATE_CHILD_CONFIG: JSON.stringify(config), TOLLGATE_CHILD_SECRETS: JSON.stringify(secrets) },
    stdio: ["ignore", "pipe", "inherit"],
    detached: true,
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += d;
      const m = /READY (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once("exit", (code) => reject(new Error(`gateway process exited with ${code}`)));
  });
  const pid = child.pid!;
  return {
    pid,
    port,
    rssBytes() {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      return m ? Number(m[1]) * 1024 : 0;
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      try {
        process.kill(-pid, "SIGTERM");
      } catch {
        /* already gone */
      }
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {
          /* gone */
        }
      }
    },
  };
}

/** The sandbox emulator (in this process) and a gateway in a child process in front of it, with one tenant. */
export async function startChildStack(opts: { runtimeTokenTtlSeconds?: number } = {}) {
  const { randomBytes } = await import("node:crypto");
  const { startEmulator } = await import("../../emulator/index.js");
  const { generateTenantKey, hashTenantKey } = await import("../../src/identity/tenants.js");
  const { Hyperbrowser } = await import("@hyperbrowser/sdk");
  const emu = await startEmulator({ modules: ["sandboxes"], runtimeTokenTtlSeconds: opts.runtimeTokenTtlSeconds });
  const rport = new URL(emu.runtimeUrl).port;
  const key = generateTenantKey();
  const child = await spawnGateway(
    {
      server: { host: "127.0.0.1", port: 0, logLevel: "silent" },
      upstream: { baseUrl: emu.controlUrl, allowedHosts: [`127.0.0.1:${rport}`, `localhost:${rport}`] },
      tenants: [{ id: "bench", keys: [{ hash: await hashTenantKey(key) }], scopes: ["sandboxes"] }],
    },
    { upstreamApiKey: emu.apiKey, tokenSecret: randomBytes(32).toString("hex") },
  ).catch(async (err) => {
    await emu.close();
    throw err;
  });
  const gatewayUrl = `http://localhost:${child.port}`;
  return {
    emu,
    child,
    gatewayUrl,
    key,
    hb: new Hyperbrowser({ apiKey: key, baseUrl: gatewayUrl }),
    async close() {
      await child.stop();
      await emu.close();
    },
  };
}

/** Streams `bytes` through `send` while sampling the gateway's RSS every 25 ms; returns MB/s and the peak RSS. */
export async function measureTransfer(child: ChildGateway, bytes: number, send: () => Promise<number>) {
  let peak = child.rssBytes();
  const timer = setInterval(() => (peak = Math.max(peak, child.rssBytes())), 25);
  const t0 = performance.now();
  try {
    const moved = await send();
    const secs = (performance.now() - t0) / 1000;
    return { moved, mbPerSec: bytes / 1024 / 1024 / secs, peakRss: peak, seconds: secs };
  } finally {
    clearInterval(timer);
  }
}
