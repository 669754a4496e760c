// Runs fuzz cases against a gateway with a few concurrent clients and checks every answer: never a 500, every 5xx a
// JSON 502/503/504 `{message, code}`, no secret in any body, no smuggled request reaching the upstream.
import { Agent, request } from "node:http";
import { connect } from "node:net";
import type { FuzzCase, HttpCase, RawCase } from "./fuzz-cases.js";

export interface FuzzReport {
  requests: number;
  raw: number;
  /** Status → count ("reset" when the gateway closed without answering, "timeout" when it did not answer in time). */
  statuses: Record<string, number>;
  /** Each violated rule, with the case that broke it (first 50). */
  failures: string[];
  failureCount: number;
  /** Markers of ambiguous raw cases, to look for upstream. */
  smuggleMarkers: string[];
  /** Cases the gateway hung up on without answering (first 20): legitimate for some (a 413 cut short), worth a look. */
  unanswered: string[];
  /** Time this (client) process's event loop was stalled, in total. */
  clientStallMs: number;
  durationMs: number;
}

export interface FuzzOptions {
  url: string;
  concurrency?: number;
  /** A request not answered by then counts as "timeout". */
  timeoutMs?: number;
  secrets: string[];
  /** Called once, when a request first goes unanswered (to probe what else still answers). */
  onFirstTimeout?: (c: HttpCase) => void;
}

const BODY_KEEP = 256 * 1024;

function describeCase(c: FuzzCase): string {
  if (c.kind === "raw") return `raw "${c.name}"`;
  const auth = c.headers["x-api-key"] ? "key" : c.headers.authorization ? "bearer" : "anon";
  return `${c.method} ${c.path.slice(0, 160)} (host ${c.headers.host?.slice(0, 60)}, ${auth}, body ${c.body?.length ?? 0} B)`;
}

export class FuzzChecker {
  readonly statuses: Record<string, number> = {};
  readonly failures: string[] = [];
  readonly unanswered: string[] = [];
  failureCount = 0;
  private readonly started = Date.now();
  constructor(private readonly secrets: string[]) {}

  count(status: string | number): void {
    this.statuses[status] = (this.statuses[status] ?? 0) + 1;
  }

  hungUp(c: FuzzCase, how: string): void {
    this.count(how);
    if (this.unanswered.length < 20) this.unanswered.push(`${how}: ${describeCase(c)}`);
  }

  fail(c: FuzzCase, why: string): void {
    this.failureCount++;
    if (this.failures.length < 50)
      this.failures.push(`[+${((Date.now() - this.started) / 1000).toFixed(1)} s] ${why} — ${describeCase(c)}`);
  }

  /** One answer: status, content type and the start of its body. */
  check(c: FuzzCase, method: string, status: number, contentType: string, body: string): void {
    this.count(status);
    if (status === 500) this.fail(c, `500 ${body.slice(0, 200)}`);
    else if (status > 500) {
      if (![502, 503, 504].includes(status)) this.fail(c, `${status} is not one of 502/503/504`);
      else if (method !== "HEAD") {
        let parsed: any;
        try {
          parsed = JSON.parse(body);
        } catch {
          /* below */
        }
        if (!contentType.includes("json") || typeof parsed?.message !== "string" || typeof parsed?.code !== "string") {
          this.fail(c, `${status} without a JSON {message, code}: ${contentType} ${body.slice(0, 120)}`);
        }
      }
    }
    for (const s of this.secrets) if (s && body.includes(s)) this.fail(c, `a secret appeared in a ${status} body`);
  }
}

/**
 * How long this process's own event loop has been stalled in total. The emulator runs in the test process: when it
 * blocks (sandbox work), the clients' timers fire late all at once, which is not the gateway failing to answer.
 */
class LoopStalls {
  total = 0;
  private last = performance.now();
  private readonly timer = setInterval(() => {
    const now = performance.now();
    if (now - this.last > 600) this.total += now - this.last - 100;
    this.last = now;
  }, 100);
  /** Stalled time up to now, counting a stall still in progress (timers can run before the monitor wakes). */
  now(): number {
    const gap = performance.now() - this.last;
    return this.total + (gap > 600 ? gap - 100 : 0);
  }
  stop(): void {
    clearInterval(this.timer);
  }
}

function sendHttp(o: FuzzOptions, agent: Agent, c: HttpCase, checker: FuzzChecker, stalls: LoopStalls): Promise<void> {
  const u = new URL(o.url);
  return new Promise((resolve) => {
    let finished = false;
    const done = () => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      resolve();
    };
    let req: ReturnType<typeof request>;
    try {
      req = request({ host: u.hostname, port: u.port, method: c.method, path: c.path, headers: c.headers, agent, setHost: false });
    } catch {
      checker.count("client-refused");
      return done();
    }
    const limit = o.timeoutMs ?? 20_000;
    let headersSeen: number | undefined;
    let stalledAtStart = stalls.now();
    let rearmed = 0;
    const onTimeout = () => {
      // Our own loop was stalled meanwhile: give the gateway its full time again (a few times at most).
      if (stalls.now() - stalledAtStart > 1000 && rearmed++ < 3) {
        stalledAtStart = stalls.now();
        timer = setTimeout(onTimeout, limit);
        return;
      }
      checker.count("timeout");
      if (o.onFirstTimeout && checker.statuses.timeout === 1) o.onFirstTimeout(c);
      checker.fail(c, `no answer within ${limit} ms (${headersSeen ? `headers ${headersSeen} came, the body did not end` : "no headers"})`);
      req.destroy();
      done();
    };
    let timer = setTimeout(onTimeout, limit);
    req.on("response", (res) => {
      headersSeen = res.statusCode;
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (d: Buffer) => {
        if (size < BODY_KEEP) chunks.push(d);
        size += d.length;
      });
      const end = () => {
        if (finished) return;
        checker.check(c, c.method, res.statusCode ?? 0, String(res.headers["content-type"] ?? ""), Buffer.concat(chunks).toString("utf8"));
        done();
      };
      res.on("end", end);
      res.on("error", end);
      res.on("aborted", end);
    });
    req.on("upgrade", (res, socket) => {
      checker.count(res.statusCode ?? 101);
      socket.destroy();
      done();
    });
    req.on("error", () => {
      if (finished) return;
      checker.hungUp(c, "reset");
      done();
    });
    if (c.body) req.end(c.body);
    else req.end();
  });
}

const STATUS_LINE = /HTTP\/1\.[01] (\d{3})[^\r\n]*\r\n((?:[^\r\n]+\r\n)*)\r\n/g;

function sendRaw(o: FuzzOptions, c: RawCase, checker: FuzzChecker): Promise<void> {
  const u = new URL(o.url);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const sock = connect(Number(u.port), u.hostname);
    const timer = setTimeout(() => sock.destroy(), Math.min(o.timeoutMs ?? 20_000, 8000));
    sock.on("data", (d: Buffer) => {
      if (size < BODY_KEEP) chunks.push(d);
      size += d.length;
    });
    sock.on("error", () => {});
    sock.on("close", () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString("latin1");
      let answers = 0;
      for (const m of text.matchAll(STATUS_LINE)) {
        answers++;
        const status = Number(m[1]);
        const ct = /content-type:\s*([^\r\n]*)/i.exec(m[2] ?? "")?.[1] ?? "";
        const after = text.slice((m.index ?? 0) + m[0].length, (m.index ?? 0) + m[0].length + 2000);
        const body = after.startsWith("{") ? after.slice(0, after.indexOf("}") + 1 || undefined) : after;
        checker.check(c, "RAW", status, ct, status >= 500 ? body : after);
      }
      if (!answers) checker.hungUp(c, "closed");
      resolve();
    });
    sock.write(c.payload, () => sock.end());
  });
}

export async function runFuzz(o: FuzzOptions, cases: Iterable<FuzzCase>, onProgress?: (done: number) => void): Promise<FuzzReport> {
  const checker = new FuzzChecker(o.secrets);
  const agent = new Agent({ keepAlive: process.env.FUZZ_KEEPALIVE !== "0", maxSockets: o.concurrency ?? 16 });
  const it = cases[Symbol.iterator]();
  const markers: string[] = [];
  const stalls = new LoopStalls();
  let requests = 0;
  let raw = 0;
  const started = Date.now();
  const worker = async () => {
    for (;;) {
      const next = it.next();
      if (next.done) return;
      const c = next.value;
      requests++;
      if (c.kind === "raw") {
        raw++;
        if (c.ambiguous && c.marker) markers.push(c.marker);
        await sendRaw(o, c, checker);
      } else {
        await sendHttp(o, agent, c, checker, stalls);
      }
      if (onProgress && requests % 1000 === 0) onProgress(requests);
    }
  };
  await Promise.all(Array.from({ length: o.concurrency ?? 16 }, worker));
  agent.destroy();
  stalls.stop();
  return {
    requests,
    raw,
    statuses: checker.statuses,
    failures: checker.failures,
    failureCount: checker.failureCount,
    smuggleMarkers: markers,
    unanswered: checker.unanswered,
    clientStallMs: Math.round(stalls.total),
    durationMs: Date.now() - started,
  };
}
