// An open-loop load at a steady rate (BENCH_PACED in bench/proxy.ts and bench/worker.ts): requests are sent on a
// schedule, a few every millisecond, whatever the proxy's pace, so every contender serves the same requests at the same
// moments. Flat out (autocannon's default) a proxy's CPU per request depends on its own rate: a faster one finds more
// requests per wake-up and pays less per request, and a burst of other work on the machine slows one round's contender
// and not the next. (autocannon's `overallRate` sends each second's quota in a burst at the second's start.)
// Latency is measured from the moment a request was due, so a proxy that falls behind shows it (no coordinated omission).
import { Pool } from "undici";

export interface PacedJob {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Requests a second, over all connections. */
  rate: number;
  seconds: number;
  /** Connections the pool may open (requests beyond them wait in its queue, their latency counted). */
  connections: number;
}

export interface PacedResult {
  /** Requests answered per second over the run. */
  rps: number;
  total: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  /** Requests still unanswered when the run ended (counted as errors too). */
  late: number;
}

/** Sends `rate` requests a second for `seconds`, evenly (timers of 1 ms: a few requests each), and waits for the answers. */
export async function pacedLoad(job: PacedJob): Promise<PacedResult> {
  const u = new URL(job.url);
  const pool = new Pool(u.origin, { connections: job.connections, pipelining: 1 });
  const path = u.pathname + u.search;
  const method = (job.method ?? "GET") as "GET";
  const total = Math.round(job.rate * job.seconds);
  const everyMs = 1000 / job.rate;
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  let answered = 0;
  const start = performance.now();
  const one = async (due: number) => {
    try {
      const r = await pool.request({ path, method, headers: job.headers, body: job.body });
      await r.body.dump();
      if (r.statusCode < 200 || r.statusCode > 299) non2xx++;
    } catch {
      errors++;
    }
    answered++;
    latencies.push(performance.now() - due);
  };
  const pending: Promise<void>[] = [];
  let sent = 0;
  await new Promise<void>((done) => {
    const tick = () => {
      const now = performance.now();
      const due = Math.min(total, Math.floor((now - start) / everyMs) + 1);
      for (; sent < due; sent++) pending.push(one(start + sent * everyMs));
      if (sent >= total) done();
      else setTimeout(tick, 1);
    };
    tick();
  });
  // The last requests get up to two seconds to answer; later ones count as errors.
  await Promise.race([Promise.all(pending), new Promise((r) => setTimeout(r, 2000))]);
  const seconds = (performance.now() - start) / 1000;
  const late = total - answered;
  await pool.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN);
  return { rps: answered / seconds, total: answered, p50: at(0.5), p99: at(0.99), non2xx, errors: errors + late, late };
}
