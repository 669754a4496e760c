// Highly available Redis for tests, from Debian's redis-server and redis-sentinel: a primary with one replica watched
// by three sentinels, or a three-primary Redis Cluster. Every process listens on 127.0.0.1 (free ports), runs in a
// temporary directory of its own, and is stopped by its PID.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "../helpers/free-port.js";

const run = promisify(execFile);

interface Proc {
  port: number;
  pid: number;
  child: ChildProcess;
  exited: Promise<void>;
}

/** Starts `bin` with `args` in `cwd` and waits for `ready` in its output. */
async function start(bin: string, args: string[], cwd: string, port: number, ready: RegExp): Promise<Proc> {
  const child = spawn(bin, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${bin} did not start on ${port}:\n${out}`)), 10_000);
    const seen = (d: Buffer) => {
      out += d.toString();
      if (ready.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on("data", seen);
    child.stderr!.on("data", seen);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${bin} exited with ${code}:\n${out}`));
    });
  });
  // The listeners stay: the pipes keep draining, so a chatty process never blocks on a full one.
  return { port, pid: child.pid!, child, exited };
}

async function stop(p: Proc, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  process.kill(p.pid, signal);
  const kill = setTimeout(() => p.child.exitCode === null && p.child.signalCode === null && process.kill(p.pid, "SIGKILL"), 3000);
  await p.exited;
  clearTimeout(kill);
}

const SERVER_ARGS = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no"];

async function redisServer(dir: string, extra: string[] = []): Promise<Proc> {
  const port = await freePort();
  return start("redis-server", ["--port", String(port), ...SERVER_ARGS, ...extra], dir, port, /Ready to accept connections/);
}

async function cli(port: number, ...args: string[]): Promise<string> {
  return (await run("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...args], { timeout: 10_000 })).stdout;
}

async function until(what: string, ms: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface SentinelSet {
  /** The name the sentinels know the primary by. */
  name: string;
  sentinels: { host: string; port: number }[];
  primary: { port: number; pid: number };
  replicas: { port: number; pid: number }[];
  /** SIGKILLs the current primary: no shutdown, no last write to its replica. */
  killPrimary(): Promise<void>;
  /** The port the sentinels name as primary now. */
  currentPrimary(): Promise<number>;
  /** What each sentinel names as primary and each live server's replication state, for a failure's message. */
  state(): Promise<string>;
  stop(): Promise<void>;
}

/**
 * A primary, its replicas (default 1) and three sentinels (quorum 2) that declare the primary down after `downAfterMs`
 * without an answer and promote a replica.
 */
export async function startSentinelSet(opts: { downAfterMs?: number; replicas?: number } = {}): Promise<SentinelSet> {
  const dir = await mkdtemp(join(tmpdir(), "tollgate-sentinel-"));
  const procs: Proc[] = [];
  const name = "tollgate-primary";
  try {
    const primary = await redisServer(dir);
    procs.push(primary);
    const replicas: Proc[] = [];
    for (let i = 0; i < (opts.replicas ?? 1); i++) {
      const replica = await redisServer(dir, ["--replicaof", "127.0.0.1", String(primary.port)]);
      procs.push(replica);
      replicas.push(replica);
      await until("a replica to sync", 10_000, async () => /master_link_status:up/.test(await cli(replica.port, "info", "replication")));
    }
    const sentinels: Proc[] = [];
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const conf = join(dir, `sentinel-${i}.conf`);
      await writeFile(
        conf,
        [
          `port ${port}`,
          "bind 127.0.0.1",
          "protected-mode no",
          `dir ${dir}`,
          `sentinel monitor ${name} 127.0.0.1 ${primary.port} 2`,
          `sentinel down-after-milliseconds ${name} ${opts.downAfterMs ?? 1000}`,
          `sentinel failover-timeout ${name} 4000`,
          `sentinel parallel-syncs ${name} 1`,
          "",
        ].join("\n"),
      );
      const s = await start("redis-sentinel", [conf], dir, port, /Sentinel ID is|monitor master/);
      sentinels.push(s);
      procs.push(s);
    }
    // Every sentinel must know the replica and the other sentinels before a failover can be agreed on.
    await until("the sentinels to find each other and the replica", 15_000, async () => {
      for (const s of sentinels) {
        const info = await cli(s.port, "sentinel", "master", name);
        const field = (k: string) => Number(new RegExp(`${k}\\n(\\d+)`).exec(info)?.[1] ?? -1);
        if (field("num-slaves") < replicas.length || field("num-other-sentinels") < 2) return false;
      }
      return true;
    });
    const set: SentinelSet = {
      name,
      sentinels: sentinels.map((s) => ({ host: "127.0.0.1", port: s.port })),
      primary: { port: primary.port, pid: primary.pid },
      replicas: replicas.map((r) => ({ port: r.port, pid: r.pid })),
      killPrimary: () => stop(primary, "SIGKILL"),
      async currentPrimary() {
        const out = await cli(sentinels[0]!.port, "sentinel", "get-master-addr-by-name", name);
        return Number(out.trim().split("\n")[1]);
      },
      async state() {
        const lines: string[] = [];
        for (const s of sentinels) {
          const addr = await cli(s.port, "sentinel", "get-master-addr-by-name", name).catch((e: Error) => e.message);
          lines.push(`sentinel ${s.port}: primary ${addr.trim().split("\n").join(":")}`);
        }
        for (const p of [primary, ...replicas]) {
          if (p.child.exitCode !== null || p.child.signalCode !== null) {
            lines.push(`redis ${p.port}: exited`);
            continue;
          }
          const info = await cli(p.port, "info", "replication").catch((e: Error) => e.message);
          const field = (k: string) => new RegExp(`${k}:(\\S+)`).exec(info)?.[1];
          lines.push(
            `redis ${p.port}: role ${field("role")}, master ${field("master_port") ?? "-"} link ${field("master_link_status") ?? "-"}, ` +
              `replicas ${field("connected_slaves")}, offset ${field("master_repl_offset")}`,
          );
        }
        return lines.join("\n");
      },
      async stop() {
        for (const p of procs.reverse()) await stop(p);
        await rm(dir, { recursive: true, force: true });
      },
    };
    return set;
  } catch (err) {
    for (const p of procs.reverse()) await stop(p);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

export interface RedisClusterSet {
  nodes: { host: string; port: number }[];
  /** The processes' ids, by node (to read their CPU time). */
  pids: number[];
  stop(): Promise<void>;
}

/**
 * Three primaries with `--cluster-enabled yes`, joined with `redis-cli --cluster create`, each serving a third of the
 * slots; with `replicas: 1`, each with a replica of its own (six processes). `primaries: 1`: one node serving every
 * slot (CLUSTER ADDSLOTSRANGE), a cluster of one, for comparisons.
 */
export async function startRedisCluster(opts: { replicas?: number; primaries?: 1 | 3 } = {}): Promise<RedisClusterSet> {
  const dir = await mkdtemp(join(tmpdir(), "tollgate-cluster-"));
  const procs: Proc[] = [];
  try {
    const replicas = opts.replicas ?? 0;
    const primaries = opts.primaries ?? 3;
    for (let i = 0; i < primaries * (1 + replicas); i++) {
      procs.push(
        await redisServer(dir, [
          "--cluster-enabled",
          "yes",
          "--cluster-config-file",
          `nodes-${i}.conf`,
          "--cluster-node-timeout",
          "5000",
          // A node alone (primaries: 1) never learns its address from a peer: CLUSTER SLOTS would name it "".
          "--cluster-announce-ip",
          "127.0.0.1",
        ]),
      );
    }
    const addrs = procs.map((p) => `127.0.0.1:${p.port}`);
    if (primaries === 1) {
      // `redis-cli --cluster create` wants three primaries: one node takes every slot itself.
      if (replicas) throw new Error("a one-primary cluster is started without replicas");
      await cli(procs[0]!.port, "cluster", "addslotsrange", "0", "16383");
    } else {
      await run("redis-cli", ["--cluster", "create", ...addrs, "--cluster-replicas", String(replicas), "--cluster-yes"], {
        timeout: 20_000,
      });
    }
    await until("the cluster to be ok on every node, every replica in sync", 20_000, async () => {
      for (const p of procs) {
        if (!/cluster_state:ok/.test(await cli(p.port, "cluster", "info"))) return false;
        const repl = await cli(p.port, "info", "replication");
        if (/role:slave/.test(repl) && !/master_link_status:up/.test(repl)) return false;
      }
      return true;
    });
    return {
      nodes: procs.map((p) => ({ host: "127.0.0.1", port: p.port })),
      pids: procs.map((p) => p.pid),
      async stop() {
        for (const p of procs.reverse()) await stop(p);
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    for (const p of procs.reverse()) await stop(p);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
