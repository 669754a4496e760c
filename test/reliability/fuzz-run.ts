// Runs fuzz cases against a gateway with a few concurrent clients and checks every answer: never a 500, every 5xx a
// JSON 502/503/504 `{message, code}`, no secret in any body, no smuggled request reaching the upstream.
import { Agent, request } from "node:http";
import { connect } from "node:net";
import type { FuzzCase, HttpCase, RawCase } from "./fuzz-cases.js";

export interface FuzzReport {
  requests: number;
  raw: number;
  /**
   * Status → count of final answers; "closed" for the raw cases the gateway may refuse by closing the connection and
   * did; "unanswered" for requests it should have answered and closed on, "timeout" for those not answered in time
   * (both also failures).
   */
  statuses: Record<string, number>;
  /** Each violated rule, with the case that broke it (first 50). */
  failures: string[];
  failureCount: number;
  /** Markers of ambiguous raw cases, to look for upstream. */
  smuggleMarkers: string[];
  /** Raw cases the gateway refused by closing the connection, as it may (first 20). */
  closed: string[];
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
  readonly closedCases: string[] = [];
  failureCount = 0;
  private readonly started = Date.now();
  constructor(private readonly secrets: string[]) {}

  count(status: string | number): void {
    this.statuses[status] = (this.statuses[status] ?? 0) + 1;
  }

  /** A raw case the gateway may refuse by closing the connection, refused so. */
  closed(c: RawCase): void {
    this.count("closed");
    if (this.closedCases.length < 20) this.closedCases.push(describeCase(c));
  }

  /** A request the gateway should have answered, whose connection closed without an answer. */
  unanswered(c: FuzzCase, why: string): void {
    this.count("unanswered");
    this.fail(c, `closed without an answer (${why})`);
  }

  fail(c: FuzzCase, why: string): void {
    this.failureCount++;
    if (this.failures.length < 50)
      this.failures.push(`[+${((Date.now() - this.started) / 1000).toFixed(1)} s] ${why} — ${describeCase(c)}`);
  }

  /** One final answer: status, content type and the start of its body. */
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

/**
 * The case's headers, with the body's Content-Length. Node's client sets it itself, except when an Expect header makes
 * it write the headers before it knows the body: then a GET or DELETE body goes out with no framing at all, the gateway
 * reads those bytes as the next request on the connection, and the request after it on that connection is lost.
 */
function framed(c: HttpCase): Record<string, string> {
  return c.body ? { ...c.headers, "content-length": String(c.body.length) } : c.headers;
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
      req = request({ host: u.hostname, port: u.port, method: c.method, path: c.path, headers: framed(c), agent, setHost: false });
    } catch {
      checker.count("client-refused");
      return done();
    }
    const limit = o.timeoutMs ?? 20_000;
    let headersSeen: number | undefined;
    let answered: ((why: string) => void) | undefined;
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
      // An answer cut off after its headers (the gateway closes after refusing a large body) is still an answer.
      const end = () => {
        if (finished) return;
        checker.check(c, c.method, res.statusCode ?? 0, String(res.headers["content-type"] ?? ""), Buffer.concat(chunks).toString("utf8"));
        done();
      };
      answered = end;
      res.on("end", end);
      res.on("error", end);
      res.on("aborted", end);
    });
    req.on("upgrade", (res, socket) => {
      checker.count(res.statusCode ?? 101);
      socket.destroy();
      done();
    });
    req.on("error", (err: NodeJS.ErrnoException) => {
      if (finished) return;
      if (answered) answered(err.message);
      else {
        checker.unanswered(c, `${err.code ?? ""} ${err.message}${req.reusedSocket ? ", on a reused connection" : ""}`);
        done();
      }
    });
    if (c.body) req.end(c.body);
    else req.end();
  });
}

const STATUS_LINE = /HTTP\/1\.[01] (\d{3})[^\r\n]*\r\n((?:[^\r\n]+\r\n)*)\r\n/g;
/** A case the gateway must answer is done this long after its last byte came (pipelined answers come together). */
const RAW_IDLE_MS = 300;

/**
 * Sends one raw case on its own connection. One the gateway may refuse by closing is sent and our side closed at once
 * (cut-off requests end only so); one it must answer is sent with our side left open, and read until the gateway closes
 * or goes quiet after answering: no status line by `timeoutMs` is a failure.
 */
function sendRaw(o: FuzzOptions, c: RawCase, checker: FuzzChecker): Promise<void> {
  const u = new URL(o.url);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const sock = connect(Number(u.port), u.hostname);
    let timer = setTimeout(() => sock.destroy(), c.mustAnswer ? (o.timeoutMs ?? 20_000) : Math.min(o.timeoutMs ?? 20_000, 8000));
    sock.on("data", (d: Buffer) => {
      if (size < BODY_KEEP) chunks.push(d);
      size += d.length;
      // A final status line (not an interim 1xx, but 101) in this chunk: the answer is here, the rest follows at once.
      if (c.mustAnswer && /HTTP\/1\.[01] (?!1(?!01))\d{3}/.test(d.toString("latin1"))) {
        clearTimeout(timer);
        timer = setTimeout(() => sock.destroy(), RAW_IDLE_MS);
      }
    });
    sock.on("error", () => {});
    sock.on("close", () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString("latin1");
      let answers = 0;
      for (const m of text.matchAll(STATUS_LINE)) {
        const status = Number(m[1]);
        if (status >= 100 && status < 200 && status !== 101) continue; // interim (100 Continue): the answer follows
        answers++;
        const ct = /content-type:\s*([^\r\n]*)/i.exec(m[2] ?? "")?.[1] ?? "";
        const after = text.slice((m.index ?? 0) + m[0].length, (m.index ?? 0) + m[0].length + 2000);
        const body = after.startsWith("{") ? after.slice(0, after.indexOf("}") + 1 || undefined) : after;
        checker.check(c, "RAW", status, ct, status >= 500 ? body : after);
      }
      if (!answers && c.mustAnswer) checker.unanswered(c, size ? `${size} bytes with no status line` : "nothing came");
      else if (!answers) checker.closed(c);
      resolve();
    });
    if (c.mustAnswer) sock.write(c.payload);
    else sock.write(c.payload, () => sock.end());
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
    closed: checker.closedCases,
    clientStallMs: Math.round(stalls.total),
    durationMs: Date.now() - started,
  };
}
