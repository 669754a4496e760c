// `npm run bench -- ledger-cluster`: ledger and ownership throughput on a Redis Cluster of 1 primary vs 3 primaries,
// same load, timed.
//
// Starts real `redis-server --cluster-enabled yes` processes on 127.0.0.1 (3 joined with `redis-cli --cluster create`;
// 1 given every slot with CLUSTER ADDSLOTSRANGE) and drives the gateway's own Redis stores (tenant layout: each
// tenant's keys share its hash tag; each resource's ownership record on its own slot) for BENCH_LEDGER_TENANTS tenants
// (default 1,000). Two workloads:
//   - ledger: the paid path's two ledger writes, reserve then commit (one "op" = the pair);
//   - ownership: a creation's claim of a new resource then a control read's owner lookup of it (one "op" = the pair).
//
// The headline (what the issue asks for, target 3 vs 1 >= 2.5x): ops per second, timed, with each primary limited to
// the same fraction of a core (BENCH_PRIMARY_CPU, default 0.05; BENCH_PRIMARY_CPU_PERIOD_US the CFS period, default
// the shortest that allows the kernel's 1 ms minimum quota: 20 ms at 0.05), each in a cgroup of its own
// (bench/cpu-limit.ts).
// On this small host the load generator and the primaries share the cores; limited, each primary saturates at its
// limit long before the generator does, so the rate the generator completes is set by the primaries, as it is when
// each primary has a host of its own. The limit is low so that the generator (one Node process, ~250 µs of CPU per
// ledger op) carries three saturated primaries in half a core. BENCH_CLUSTER_IN_FLIGHT (default "576,1728": calls in
// flight on 1, on 3; the same 576 per primary, so each primary's queue is as deep, and batches as much, on either side;
// "576,576" gives both the same total) keeps every primary throttled in every period in both: an op visits
// two or three slots one after the other, each waiting for its primary's next slice of CPU, so it takes many calls
// in flight to keep three queues full (192 left ownership's three at ~80 % of their limit). By default the 1 and the
// 3 run at the same time (BENCH_CLUSTER_TOGETHER=0: one after the other), so the host's other load falls on both in
// the same seconds: BENCH_CLUSTER_WARMUP_SECONDS (default 2), then BENCH_CLUSTER_SECONDS (default 10) are timed on
// both while the loads keep running; BENCH_CLUSTER_ROUNDS (default 3) rounds, and the headline ratio is their median.
// Printed beside the rate, as evidence: each primary's CPU in the window (/proc/<pid>/stat, against its limit × the
// window), the CFS periods in which its limit throttled it (cpu.stat nr_throttled / nr_periods), the generator's own
// CPU, the spread of the commands over the primaries, and a warning when a primary stayed under 90 % of its limit
// (then the rate is not the primaries': the host was too busy, or too few calls were in flight).
// Where cgroups cannot be written (not root), the reason is printed and only the uncapped figures follow.
//
// Uncapped (BENCH_CLUSTER_UNCAPPED=1, or when no limit can be set): the same load with no limit, BENCH_LEDGER_CONCURRENCY
// in flight (default 64) for BENCH_LEDGER_SECONDS (default 6):
//   - capacity: ops per CPU second of the busiest primary, its CPU read from /proc/<pid>/stat around the load, less
//     its idle CPU (cron; in a cluster of three, the gossip) measured for 3 s before;
//   - spread: 1 / the busiest primary's share of the commands (INFO commandstats calls). Counted, not timed: the
//     most the cluster can gain from the primaries (1.00 for one primary; 3.00 for a perfect spread over three);
//   - command time: ops per second of the busiest primary's command time (INFO commandstats usec);
//   - wall: ops per second as this process saw them, on a host whose cores the generator and primaries share.
import { Redis } from "ioredis";
import { loadavg } from "node:os";
import { redisStores } from "../src/state/redis.js";
import { startRedisCluster, type RedisClusterSet } from "../test/state/redis-ha.js";
import { type CpuLimit, cpuLimitUnavailable, limitCpu, processCpuSeconds } from "./cpu-limit.js";

const TENANTS = Number(process.env.BENCH_LEDGER_TENANTS ?? 1000);
const CONCURRENCY = Number(process.env.BENCH_LEDGER_CONCURRENCY ?? 64);
const SECONDS = Number(process.env.BENCH_LEDGER_SECONDS ?? 6);
const PRIMARY_CPU = Number(process.env.BENCH_PRIMARY_CPU ?? 0.05);
/** The CFS period of each primary's limit, µs (default: cpu-limit's own, 10 ms, or longer where the quota needs it). */
const PERIOD_US = process.env.BENCH_PRIMARY_CPU_PERIOD_US ? Number(process.env.BENCH_PRIMARY_CPU_PERIOD_US) : undefined;
const [IN_FLIGHT_1, IN_FLIGHT_3] = (process.env.BENCH_CLUSTER_IN_FLIGHT ?? "576,1728").split(",").map(Number) as [number, number];
const CAPPED_WARMUP_MS = Number(process.env.BENCH_CLUSTER_WARMUP_SECONDS ?? 2) * 1000;
const CAPPED_SECONDS = Number(process.env.BENCH_CLUSTER_SECONDS ?? 10);
const UNCAPPED = process.env.BENCH_CLUSTER_UNCAPPED === "1";
/**
 * The 1 and the 3 under load at the same time, timed over the same window (the default; BENCH_CLUSTER_TOGETHER=0
 * runs them one after the other): both see the host's other load in the same seconds.
 */
const TOGETHER = process.env.BENCH_CLUSTER_TOGETHER !== "0";
/** Rounds of 1 and 3 primaries; the headline is the median of their ratios. */
const ROUNDS = Number(process.env.BENCH_CLUSTER_ROUNDS ?? 3);

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ: 100 on Linux). */
const CLK_TCK = Number(process.env.BENCH_CLK_TCK ?? 100);

interface NodeStats {
  cpu: number;
  /** Commands run (INFO commandstats calls, every command; a script is one, what it runs inside is not counted). */
  calls: number;
  /** Socket reads the primary made (INFO stats total_reads_processed): commands per read is how much it batches. */
  reads: number;
  /** Microseconds spent running commands (INFO commandstats, every command): the primary's serial work. */
  busy: number;
}

async function stats(probe: Redis, pid: number): Promise<NodeStats> {
  // The CPU first: read at once, beside the op count it is set against; INFO may wait behind a throttled primary's queue.
  const cpu = await processCpuSeconds(pid, CLK_TCK);
  const cmd = await probe.info("commandstats");
  // The probe's own INFO calls are counted too: a few, on every primary alike.
  const calls = [...cmd.matchAll(/cmdstat_[^:]+:calls=(\d+)/g)].reduce((a, m) => a + Number(m[1]), 0);
  const busy = [...cmd.matchAll(/cmdstat_[^:]+:calls=\d+,usec=(\d+)/g)].reduce((a, m) => a + Number(m[1]), 0);
  const reads = Number(/total_reads_processed:(\d+)/.exec(await probe.info("stats"))?.[1] ?? 0);
  return { cpu, calls, reads, busy };
}

type Workload = "ledger" | "ownership";

interface Bench {
  cluster: RedisClusterSet;
  /** One op of the workload. */
  pair: () => Promise<void>;
  /** Every primary's figures now, in node order. */
  probe: () => Promise<NodeStats[]>;
}

/** A cluster of `primaries` with the gateway's stores on it, warmed (scripts loaded, every tenant written), for `body`. */
async function withCluster<T>(primaries: 1 | 3, workload: Workload, concurrency: number, body: (b: Bench) => Promise<T>): Promise<T> {
  const cluster = await startRedisCluster({ primaries });
  const stores = redisStores({ cluster: cluster.nodes }, { prefix: `bench${primaries}:`, commandTimeoutMs: 30_000 });
  const probes = cluster.nodes.map((n) => new Redis({ host: n.host, port: n.port }));
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
    for (let i = 0; i < TENANTS; i += concurrency) await Promise.all(Array.from({ length: Math.min(concurrency, TENANTS - i) }, pair));
    const probe = () => Promise.all(probes.map((p, i) => stats(p, cluster.pids[i]!)));
    return await body({ cluster, pair, probe });
  } finally {
    for (const p of probes) p.disconnect();
    await stores.close();
    await cluster.stop();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface CappedSide {
  primaries: 1 | 3;
  bench: Bench;
  concurrency: number;
}

/**
 * Each primary of every side limited to PRIMARY_CPU of a core: each side's `concurrency` calls in flight without a
 * pause, the sides' loads running at the same time, each side's rate timed over the same window once the loads have
 * run CAPPED_WARMUP_MS. Sides run together see the same host in the same seconds, so a drift in the host's other load
 * weighs on both alike.
 */
async function runCappedSides(sides: CappedSide[]) {
  const limits: CpuLimit[][] = [];
  try {
    for (const side of sides) {
      const own: CpuLimit[] = [];
      limits.push(own);
      for (const pid of side.bench.cluster.pids) {
        const limit = await limitCpu(pid, PRIMARY_CPU, { periodUs: PERIOD_US });
        if (!limit) throw new Error(`no CPU limit for primary ${pid}: ${await cpuLimitUnavailable()}`);
        own.push(limit);
      }
    }
    const done = sides.map(() => 0);
    let stop = false;
    const load = Promise.all(
      sides.flatMap((side, k) =>
        Array.from({ length: side.concurrency }, async () => {
          while (!stop) {
            await side.bench.pair();
            done[k]!++;
          }
        }),
      ),
    );
    load.catch(() => {});
    const mark = async () => {
      const t = performance.now();
      const ops = [...done];
      const generator = process.cpuUsage();
      const throttling = await Promise.all(limits.map((own) => Promise.all(own.map((l) => l.throttling()))));
      const nodes = await Promise.all(sides.map((side) => side.bench.probe()));
      return { t, ops, generator, throttling, nodes };
    };
    let from: Awaited<ReturnType<typeof mark>>;
    let to: typeof from;
    try {
      await Promise.race([sleep(CAPPED_WARMUP_MS), load]);
      from = await mark();
      await Promise.race([sleep(CAPPED_SECONDS * 1000), load]);
      to = await mark();
    } finally {
      stop = true;
    }
    await load;
    const elapsed = (to.t - from.t) / 1000;
    const gen = (to.generator.user + to.generator.system - from.generator.user - from.generator.system) / 1e6;
    return sides.map((side, k) => {
      const before = from.nodes[k]!;
      const after = to.nodes[k]!;
      const calls = after.map((a, i) => a.calls - before[i]!.calls);
      const totalCalls = calls.reduce((x, y) => x + y, 0);
      const reads = after.reduce((sum, a, i) => sum + a.reads - before[i]!.reads, 0);
      const ops = to.ops[k]! - from.ops[k]!;
      return {
        primaries: side.primaries,
        concurrency: side.concurrency,
        fraction: limits[k]![0]!.fraction,
        periodUs: limits[k]![0]!.periodUs,
        ops,
        elapsed,
        rate: ops / elapsed,
        /** Each primary's CPU seconds in the window. */
        cpu: after.map((a, i) => a.cpu - before[i]!.cpu),
        /** Each primary's CFS periods with work, and those in which it was throttled. */
        throttled: to.throttling[k]!.map((a, i) => ({
          throttled: a.throttled - from.throttling[k]![i]!.throttled,
          periods: a.periods - from.throttling[k]![i]!.periods,
        })),
        /** The load generator's (this process's) CPU, in cores, for every side at once. */
        generator: gen / elapsed,
        shares: calls.map((c) => c / totalCalls),
        perRead: totalCalls / Math.max(reads, 1),
      };
    });
  } finally {
    for (const own of limits) for (const l of own) await l.release();
  }
}

type CappedResult = Awaited<ReturnType<typeof runCappedSides>>[number];

/** One cluster of `primaries`, capped, alone. */
const runCapped = (primaries: 1 | 3, workload: Workload, concurrency: number) =>
  withCluster(primaries, workload, concurrency, async (bench) => (await runCappedSides([{ primaries, bench, concurrency }]))[0]!);

/** The cluster of 1 and the cluster of 3, capped, under load at the same time. */
const runCappedTogether = (workload: Workload) =>
  withCluster(1, workload, IN_FLIGHT_1, (one) =>
    withCluster(3, workload, IN_FLIGHT_3, (three) =>
      runCappedSides([
        { primaries: 1, bench: one, concurrency: IN_FLIGHT_1 },
        { primaries: 3, bench: three, concurrency: IN_FLIGHT_3 },
      ]),
    ),
  );

/** No limit: `concurrency` calls in flight for SECONDS; capacity by the busiest primary's CPU (see the head). */
async function runUncapped(primaries: 1 | 3, workload: Workload, concurrency = CONCURRENCY) {
  return withCluster(primaries, workload, concurrency, async ({ pair, probe }) => {
    // What each primary spends idle (its cron, and in a cluster of three the gossip between them), subtracted below
    // so the capacity counts the CPU the load cost.
    const idleFrom = await probe();
    const idleStarted = performance.now();
    await sleep(IDLE_MS);
    const idleTo = await probe();
    const idleRate = idleTo.map((a, i) => (a.cpu - idleFrom[i]!.cpu) / ((performance.now() - idleStarted) / 1000));
    const before = await probe();
    let done = 0;
    const started = performance.now();
    const deadline = started + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
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
  });
}

/** How long each primary's idle CPU is measured before the load. */
const IDLE_MS = Number(process.env.BENCH_CLUSTER_IDLE_MS ?? 3000);
/** Also run 3 primaries at 3× the calls in flight (BENCH_CLUSTER_MATCHED=0 to skip). */
const MATCHED = process.env.BENCH_CLUSTER_MATCHED !== "0";
const order = (process.env.BENCH_LEDGER_ORDER ?? "1,3").split(",").map(Number) as (1 | 3)[];
const workloads = (process.env.BENCH_CLUSTER_WORKLOADS ?? "ledger,ownership").split(",") as Workload[];
const pctList = (xs: number[]) => xs.map((x) => `${(x * 100).toFixed(0)}%`).join("/");
const x = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
const primariesName = (n: 1 | 3) => `${n} primar${n === 1 ? "y" : "ies"}`;

const noLimit = await cpuLimitUnavailable();
if (noLimit) console.log(`ledger-cluster: no CPU limit per primary (${noLimit}); uncapped figures only`);
else {
  console.log(
    `ledger-cluster load: ${TENANTS} tenants, each primary limited to ${PRIMARY_CPU} of a core (a cgroup each), ` +
      `${IN_FLIGHT_1} in flight on 1 primary and ${IN_FLIGHT_3} on 3, ${TOGETHER ? "both at once" : "one after the other"}, ${CAPPED_WARMUP_MS / 1000}s warm-up then ${CAPPED_SECONDS}s timed; ` +
      `load average ${loadavg()[0]!.toFixed(2)} (ledger op = reserve+commit; ownership op = claim of a new resource + owner lookup)`,
  );
  for (const workload of workloads) {
    const ratios: number[] = [];
    let fraction = PRIMARY_CPU;
    let periodMs = 0;
    let spread = "";
    for (let round = 1; round <= ROUNDS; round++) {
      const tag = ROUNDS > 1 ? ` round ${round}` : "";
      const results = new Map<1 | 3, CappedResult>();
      if (TOGETHER) for (const r of await runCappedTogether(workload)) results.set(r.primaries, r);
      else {
        // Odd rounds run the 1 first, even rounds the 3: a drift in the host's load weighs on both sides alike.
        const sides = round % 2 ? order : [...order].reverse();
        for (const n of sides) results.set(n, await runCapped(n, workload, n === 1 ? IN_FLIGHT_1 : IN_FLIGHT_3));
      }
      for (const n of order) {
        const r = results.get(n)!;
        const limitSeconds = r.fraction * r.elapsed;
        console.log(
          `${workload}-cluster${tag} ${primariesName(n)} (each limited to ${r.fraction} of a core): ${r.rate.toFixed(0)} ops/s wall, ` +
            `${r.ops} ops in ${r.elapsed.toFixed(2)}s, ${r.concurrency} in flight; primary CPU s ${r.cpu.map((c) => c.toFixed(2)).join("/")} ` +
            `of ${limitSeconds.toFixed(2)} allowed (${pctList(r.cpu.map((c) => c / limitSeconds))}), throttled in ` +
            `${r.throttled.map((t) => `${t.throttled}/${t.periods}`).join(", ")} periods; generator ${(r.generator * 100).toFixed(0)}% of a core; ` +
            `commands per primary ${pctList(r.shares)}, ${r.perRead.toFixed(1)} per socket read; ` +
            `${((r.cpu.reduce((a, b) => a + b, 0) / r.ops) * 1e6).toFixed(0)} µs primary CPU per op`,
        );
      }
      const one = results.get(1)!;
      const three = results.get(3)!;
      fraction = one.fraction;
      periodMs = one.periodUs / 1000;
      const under = [...results].filter(([, r]) => r.cpu.some((c) => c < 0.9 * r.fraction * r.elapsed)).map(([n]) => n);
      if (under.length)
        console.log(
          `${workload}-cluster${tag} WARNING: a primary of the ${under.join(" and ")}-primary run used under 90% of its limit: not saturated, ` +
            "so this ratio is not the primaries' (a busy host, or too few calls in flight)",
        );
      ratios.push(three.rate / one.rate);
      spread = x(1 / Math.max(...three.shares), 1 / Math.max(...one.shares));
      if (ROUNDS > 1) console.log(`${workload}-cluster${tag} 3 vs 1: ${x(three.rate, one.rate)} wall; spread ${spread}`);
    }
    const sorted = [...ratios].sort((a, b) => a - b);
    const median = sorted.length % 2 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
    console.log(
      `${workload}-cluster 3 vs 1: ${median.toFixed(2)}x wall (each primary limited to ${fraction} of a core, ${periodMs} ms CFS period)` +
        (ROUNDS > 1 ? `; median of ${ROUNDS} rounds, ${ratios.map((r) => `${r.toFixed(2)}x`).join(", ")}` : `; spread ${spread}`),
    );
  }
}

if (noLimit || UNCAPPED) {
  console.log(
    `ledger-cluster uncapped load: ${TENANTS} tenants, ${CONCURRENCY} in flight, ${SECONDS}s per cluster and workload, no CPU limit`,
  );
  for (const workload of workloads) {
    const results = new Map<number, Awaited<ReturnType<typeof runUncapped>>>();
    for (const n of order) results.set(n, await runUncapped(n, workload));
    const one = results.get(1)!;
    const three = results.get(3)!;
    // The same load per primary: three times as many calls in flight, so each primary sees about what the one did.
    const matched = MATCHED ? await runUncapped(3, workload, CONCURRENCY * 3) : undefined;
    for (const [n, r] of [[1, one], [3, three], ...(matched ? ([[`3 (${CONCURRENCY * 3} in flight)`, matched]] as const) : [])] as const) {
      console.log(
        `${workload}-cluster uncapped ${n} primar${n === 1 ? "y" : "ies"}: capacity ${r.capacity.toFixed(0)} ops per busiest-primary CPU s ` +
          `(/proc stat, less its idle CPU; ${r.rawCapacity.toFixed(0)} with it), spread ${(1 / Math.max(...r.shares)).toFixed(2)}, ${r.commandCapacity.toFixed(0)} ops per busiest-primary command s, ` +
          `wall ${r.wall.toFixed(0)} ops/s; ${r.done} ops, ${r.cpuPerOpUs.toFixed(1)} µs CPU per op summed over the primaries, ${r.perRead.toFixed(2)} commands per socket read; ` +
          `commands per primary ${pctList(r.shares)}, CPU s ${r.cpu.map((c) => c.toFixed(2)).join("/")}, command s ${r.busy.map((c) => c.toFixed(2)).join("/")}`,
      );
    }
    console.log(
      `${workload}-cluster uncapped 3 vs 1 primaries: ${x(three.capacity, one.capacity)} capacity (busiest primary's CPU), ` +
        `${x(1 / Math.max(...three.shares), 1 / Math.max(...one.shares))} by spread, ${x(three.commandCapacity, one.commandCapacity)} by command time, ` +
        `${x(three.wall, one.wall)} wall` +
        (matched
          ? `; with ${CONCURRENCY * 3} in flight on the 3 (same load per primary): ${x(matched.capacity, one.capacity)} capacity`
          : ""),
    );
  }
}
