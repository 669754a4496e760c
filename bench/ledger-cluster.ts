// `npm run bench -- ledger-cluster`: ledger and ownership throughput on a Redis Cluster of 1 primary vs 3 primaries,
// same load.
//
// Starts real `redis-server --cluster-enabled yes` processes on 127.0.0.1 (3 joined with `redis-cli --cluster create`;
// 1 given every slot with CLUSTER ADDSLOTSRANGE) and drives the gateway's own Redis stores (tenant layout: each
// tenant's keys share its hash tag; each resource's ownership record on its own slot) for BENCH_LEDGER_TENANTS tenants
// (default 1,000) at BENCH_LEDGER_CONCURRENCY calls in flight (default 64) for BENCH_LEDGER_SECONDS (default 6) per
// cluster and workload. Two workloads:
//   - ledger: the paid path's two ledger writes, reserve then commit (one "op" = the pair);
//   - ownership: a creation's claim of a new resource then a control read's owner lookup of it (one "op" = the pair).
//
// Figures per cluster and workload:
//   - capacity (the line the issue asks for, target 3 vs 1 >= 2.5x): ops per CPU second of the busiest primary, its
//     CPU read from /proc/<pid>/stat (utime + stime) before and after the same load. A primary runs commands one at a
//     time on one thread, so the cluster saturates when its busiest primary does: ops ÷ that primary's CPU seconds is
//     the rate the cluster carries once each primary has a core of its own, and CPU seconds are what the process
//     spent, whoever else shares the host.
//     Each primary's idle CPU (its cron; in a cluster of three, the gossip between them), measured for 3 s before the
//     load, is taken off: on a host where the load generator cannot keep a primary busy, it would otherwise count.
//   - spread: 1 / the busiest primary's share of the commands (INFO commandstats calls). Counted, not timed: the
//     most the cluster can gain from the primaries (1.00 for one primary; 3.00 for a perfect spread over three).
//   - command time: ops per second of the busiest primary's command time (INFO commandstats usec).
//   - wall: ops per second as this process saw them. On a small shared host the load generator and the primaries
//     compete for the same cores, so it says more about the host than about the cluster.
import { Redis } from "ioredis";
import { readFile } from "node:fs/promises";
import { redisStores } from "../src/state/redis.js";
import { startRedisCluster } from "../test/state/redis-ha.js";

const TENANTS = Number(process.env.BENCH_LEDGER_TENANTS ?? 1000);
const CONCURRENCY = Number(process.env.BENCH_LEDGER_CONCURRENCY ?? 64);
const SECONDS = Number(process.env.BENCH_LEDGER_SECONDS ?? 6);

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ: 100 on Linux). */
const CLK_TCK = Number(process.env.BENCH_CLK_TCK ?? 100);

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat. */
async function procCpu(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name (which may hold spaces, so split after its closing parenthesis): state is field 3,
  // utime 14, stime 15.
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(rest[11]) + Number(rest[12])) / CLK_TCK;
}

interface NodeStats {
  cpu: number;
  /** Commands run (INFO commandstats calls, every command; a script is one, what it runs inside is not counted). */
  calls: number;
  /** Socket reads the primary made (INFO stats total_reads_processed): commands per read is how much it batches. */
  reads: number;
  /** Microseconds spent running commands (INFO commandstats, every command): the primary's serial work. */
  busy: number;
}

async function stats(port: number, pid: number): Promise<NodeStats> {
  const r = new Redis({ host: "127.0.0.1", port, lazyConnect: true });
  try {
    await r.connect();
    const cmd = await r.info("commandstats");
    // The probe's own INFO calls are counted too: a few, on every primary alike.
    const calls = [...cmd.matchAll(/cmdstat_[^:]+:calls=(\d+)/g)].reduce((a, m) => a + Number(m[1]), 0);
    const busy = [...cmd.matchAll(/cmdstat_[^:]+:calls=\d+,usec=(\d+)/g)].reduce((a, m) => a + Number(m[1]), 0);
    const reads = Number(/total_reads_processed:(\d+)/.exec(await r.info("stats"))?.[1] ?? 0);
    return { cpu: await procCpu(pid), calls, reads, busy };
  } finally {
    r.disconnect();
  }
}

type Workload = "ledger" | "ownership";

async function run(primaries: 1 | 3, workload: Workload, concurrency = CONCURRENCY) {
  const CONCURRENCY = concurrency;
  const cluster = await startRedisCluster({ primaries });
  const stores = redisStores({ cluster: cluster.nodes }, { prefix: `bench${primaries}:`, commandTimeoutMs: 10_000 });
  try {
    const tenants = Array.from({ length: TENANTS }, (_, i) => `tenant-${i}`);
    let seq = 0;
    const ledgerPair = async () => {
      const id = `e${primaries}-${seq++}`;
      const tenant = tenants[seq % TENANTS]!;
      const now = Date.now();
      const r = await stores.ledger.reserve(
        { id, tenant, route: "/api/search", fingerprint: "f", amount: "1000", asset: "a", network: "n", payee: "p" },
        { daily: 1_000_000_000_000n },
        now,
      );
      if (!r.ok) throw new Error(`refused: ${r.window}`);
      await stores.ledger.commit(id, "0xtx", now);
    };
    const ownershipPair = async () => {
      const id = `sb${primaries}-${seq++}`;
      const tenant = tenants[seq % TENANTS]!;
      if (!(await stores.ownership.claim("sandbox", id, tenant))) throw new Error(`claim of ${id} refused`);
      if ((await stores.ownership.owner("sandbox", id)) !== tenant) throw new Error(`owner of ${id} lost`);
    };
    const pair = workload === "ledger" ? ledgerPair : ownershipPair;
    // Warm-up: scripts loaded on every primary, every tenant in the fleet set, connections open.
    for (let i = 0; i < TENANTS; i += CONCURRENCY) await Promise.all(Array.from({ length: Math.min(CONCURRENCY, TENANTS - i) }, pair));
    const probe = () => Promise.all(cluster.nodes.map((n, i) => stats(n.port, cluster.pids[i]!)));
    // What each primary spends idle (its cron, and in a cluster of three the gossip between them), subtracted below
    // so the capacity counts the CPU the load cost.
    const idleFrom = await probe();
    const idleStarted = performance.now();
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const idleTo = await probe();
    const idleRate = idleTo.map((a, i) => (a.cpu - idleFrom[i]!.cpu) / ((performance.now() - idleStarted) / 1000));
    const before = await probe();
    let done = 0;
    const started = performance.now();
    const deadline = started + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (performance.now() < deadline) {
          await pair();
          done++;
        }
      }),
    );
    const elapsed = (performance.now() - started) / 1000;
    const after = await probe();
    const rawCpu = after.map((a, i) => a.cpu - before[i]!.cpu);
    const cpu = rawCpu.map((c, i) => Math.max(c - idleRate[i]! * elapsed, 0.01));
    const calls = after.map((a, i) => a.calls - before[i]!.calls);
    const totalCalls = calls.reduce((a, b) => a + b, 0);
    const reads = after.reduce((sum, a, i) => sum + a.reads - before[i]!.reads, 0);
    const busy = after.map((a, i) => (a.busy - before[i]!.busy) / 1e6);
    return {
      done,
      wall: done / elapsed,
      capacity: done / Math.max(...cpu),
      rawCapacity: done / Math.max(...rawCpu),
      perRead: totalCalls / Math.max(reads, 1),
      commandCapacity: done / Math.max(...busy),
      cpuPerOpUs: (cpu.reduce((a, b) => a + b, 0) / done) * 1e6,
      shares: calls.map((c) => c / totalCalls),
      cpu,
      busy,
    };
  } finally {
    await stores.close();
    await cluster.stop();
  }
}

/** How long each primary's idle CPU is measured before the load. */
const IDLE_MS = Number(process.env.BENCH_CLUSTER_IDLE_MS ?? 3000);
/** Also run 3 primaries at 3× the calls in flight (BENCH_CLUSTER_MATCHED=0 to skip). */
const MATCHED = process.env.BENCH_CLUSTER_MATCHED !== "0";
const order = (process.env.BENCH_LEDGER_ORDER ?? "1,3").split(",").map(Number) as (1 | 3)[];
const workloads = (process.env.BENCH_CLUSTER_WORKLOADS ?? "ledger,ownership").split(",") as Workload[];
const pctList = (xs: number[]) => xs.map((x) => `${(x * 100).toFixed(0)}%`).join("/");
const x = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
console.log(
  `ledger-cluster load: ${TENANTS} tenants, ${CONCURRENCY} in flight, ${SECONDS}s per cluster and workload ` +
    "(ledger op = reserve+commit; ownership op = claim of a new resource + owner lookup)",
);
for (const workload of workloads) {
  const results = new Map<number, Awaited<ReturnType<typeof run>>>();
  for (const n of order) results.set(n, await run(n, workload));
  const one = results.get(1)!;
  const three = results.get(3)!;
  // The same load per primary: three times as many calls in flight, so each primary sees about what the one did.
  const matched = MATCHED ? await run(3, workload, CONCURRENCY * 3) : undefined;
  for (const [n, r] of [[1, one], [3, three], ...(matched ? ([[`3 (${CONCURRENCY * 3} in flight)`, matched]] as const) : [])] as const) {
    console.log(
      `${workload}-cluster ${n} primar${n === 1 ? "y" : "ies"}: capacity ${r.capacity.toFixed(0)} ops per busiest-primary CPU s ` +
        `(/proc stat, less its idle CPU; ${r.rawCapacity.toFixed(0)} with it), spread ${(1 / Math.max(...r.shares)).toFixed(2)}, ${r.commandCapacity.toFixed(0)} ops per busiest-primary command s, ` +
        `wall ${r.wall.toFixed(0)} ops/s; ${r.done} ops, ${r.cpuPerOpUs.toFixed(1)} µs CPU per op summed over the primaries, ${r.perRead.toFixed(2)} commands per socket read; ` +
        `commands per primary ${pctList(r.shares)}, CPU s ${r.cpu.map((c) => c.toFixed(2)).join("/")}, command s ${r.busy.map((c) => c.toFixed(2)).join("/")}`,
    );
  }
  console.log(
    `${workload}-cluster 3 vs 1 primaries: ${x(three.capacity, one.capacity)} capacity (busiest primary's CPU), ` +
      `${x(1 / Math.max(...three.shares), 1 / Math.max(...one.shares))} by spread, ${x(three.commandCapacity, one.commandCapacity)} by command time, ` +
      `${x(three.wall, one.wall)} wall` +
      (matched
        ? `; with ${CONCURRENCY * 3} in flight on the 3 (same load per primary): ${x(matched.capacity, one.capacity)} capacity`
        : ""),
  );
}
