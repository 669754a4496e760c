// How many folders a request passes through from entry to upstream (issue 27, "must show"; counted as folder changes
// along the path since issue 41): the gateway runs in-process on 127.0.0.1 in front of the emulator, its transport
// wrapped so that when a request is handed to the transport (or to the transport's direct relay, the Node fast path)
// the measure is taken. Files are mapped to folders: the top-level folder under src/ (src/<folder>/…; src/ root files
// are the folder "src"), each middleware/<step>/ its own folder (the chain's composition, middleware/chain.ts, is
// "middleware"), config/ one. The path is the order in which the request's code enters functions of shipped files,
// from its arrival to its last departure, recorded by a breakpoint that never pauses at the start of every function
// (its condition notes the file and answers false); each change of folder along it is counted, a folder left and
// entered again included. The bound applies to that count. Printed beside it: the folders on the stack at departure
// (async frames included), and (V8 precise coverage) every folder whose code ran, each also counted the old way
// (middleware/ as one folder), for comparison with the first layout test.
import { randomBytes } from "node:crypto";
import { Session } from "node:inspector";
import { parseSync, Visitor } from "oxc-parser";
import { relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { parseConfig } from "../../config/load.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { undiciTransport } from "../../src/host/node/undici-transport.js";
import type { UpstreamTransport } from "../../src/web/transport.js";

const ROOT = process.cwd();
/**
 * Folder changes along the path, arrival to departure (the fewest of ROUNDS). Measured when set (issue 41, identity
 * moved from middleware/identify to src/identity): paid search 82 (78 before the move, when the identify step and the
 * tenants and tokens it reads shared a folder), runtime call 40 (38–40 before). Some room for what varies between runs.
 * Issue 44 (a paid miss waits one state round trip, docs/paid-round-trips.md) added steps before the upstream call: the
 * hold reserved ahead with its authorization beside the unpaid call, then the preset signed: 97, and 89 (89–95) once
 * the reservation ahead moved beside the rest of the payment code (src/payments/paid-ahead.ts).
 * Issue 52 put the x402 payer behind the payments door (src/payments/payer.ts, entered through
 * src/payments/index.ts: 88 alone before the split below) and split src/platform into src/host (entries, Node adapters), src/web (the Web seams) and src/upstream: the
 * same code path, but the calls that stayed inside src/platform now cross folders (web → host, upstream ↔ web, host →
 * web): the paid search 94 run alone (rounds 110, 94, 94), 109 in a run beside other suites on a loaded machine (the
 * walk interleaves with other work); the runtime call 36–39 alone, 41–43 loaded. Then (2026-12-06) the payer took the
 * fleet's claim and the answer's figures, so the search enters src/payments/ once (asserted below): the payer now calls
 * out to the claim (search) and back, 105 in two runs at load 25 (rounds 150, 107, 105 and 149, 105, 105).
 * At the wave's merge (2026-12-06): the paid search 108 (rounds 114, 108, 108), the runtime call 44–46 (directRelay
 * on/off). Two things joined the walk: a token's parents are read from the tenant snapshot (identify → identity →
 * state, the credential tree), and the request log's batch (written up to 50 ms after its records) may be written
 * while a later request is walked (telemetry → state → telemetry at its start): not the request's own path, but
 * inside its window. Bounds with a little room for that.
 */
const PAID_SEARCH_MAX = 112;
const RUNTIME_CALL_MAX = 48;

interface Departure {
  /** Shipped files whose code ran since the measure began, up to this departure (when coverage is on). */
  ran?: Set<string>;
  /** How many function entries the path trace had recorded at this departure (when it is on). */
  entered?: number;
  method: string;
  url: string;
  /** The transport's method that sent it: request, relay or direct.relay (the Node fast path). */
  via: string;
  stack: string;
}

/**
 * V8 precise coverage (call counts) of this process, read synchronously (an inspector session on the same thread
 * answers before `post` returns): which shipped files ran code since the last read. For comparison with the stacks.
 */
class Coverage {
  private readonly session = new Session();
  constructor() {
    this.session.connect();
    this.post("Profiler.enable");
    this.post("Profiler.startPreciseCoverage", { callCount: true, detailed: false });
  }
  private post(method: string, params?: object): any {
    let out: any;
    let error: Error | null = null;
    this.session.post(method, params, (e, r) => {
      error = e;
      out = r;
    });
    if (error) throw error;
    if (out === undefined) throw new Error(`${method} did not answer synchronously`);
    return out;
  }
  /** The shipped files that ran code since the last call (reading resets the counters). */
  read(): Set<string> {
    const files = new Set<string>();
    for (const script of this.post("Profiler.takePreciseCoverage").result as any[]) {
      if (!script.url.startsWith("file://")) continue;
      if (!script.functions.some((f: any) => f.ranges.some((r: any) => r.count > 0))) continue;
      const file = relative(ROOT, fileURLToPath(script.url)).split(sep).join("/");
      if (/^(src|middleware|config)\//.test(file)) files.add(file);
    }
    return files;
  }
  stop() {
    this.post("Profiler.stopPreciseCoverage");
    this.session.disconnect();
  }
}

/**
 * The order in which shipped code runs: a breakpoint at the start of every function of every shipped script loaded,
 * whose condition appends the script's file to `entered` and answers false, so it never pauses (a pause would stop
 * this thread for good: the session is on the same thread). Off until armed; removed by stop().
 */
class EntryTrace {
  private readonly session = new Session();
  readonly files: string[] = [];
  readonly entered: number[] = [];
  /**
   * Each entry into src/payments/ from outside it: the function entered, and the shipped file that called it (the
   * nearest shipped frame below it on the synchronous stack, outside payments/). An entry with no shipped caller (a
   * continuation: a promise's callback, a timer) or called from inside payments/ is not one.
   */
  readonly moneyEntries: Array<{ at: number; from: string; to: string }> = [];
  private armed = false;
  constructor() {
    (globalThis as any).__tollgateEntered = (i: number) => {
      if (!this.armed) return false;
      this.entered.push(i);
      if (this.files[i]!.startsWith("src/payments/")) {
        const limit = Error.stackTraceLimit;
        Error.stackTraceLimit = Number.POSITIVE_INFINITY;
        const stack = new Error("entry").stack ?? "";
        Error.stackTraceLimit = limit;
        // [0]: the function entered (its condition's frames are the test's own, left out), [1]: its caller
        const [to, from] = shippedFrames(stack);
        if (from && !from.file.startsWith("src/payments/") && to?.file !== "src/payments/index.ts")
          this.moneyEntries.push({ at: this.entered.length, from: from.file, to: `${to!.file} (${to!.fn})` });
      }
      return false;
    };
    this.session.connect();
    // Debugger.enable reports every script loaded (on this thread, before it answers)
    const scripts: { scriptId: string; file: string }[] = [];
    this.session.on("Debugger.scriptParsed", ({ params }) => {
      if (!params.url.startsWith("file://")) return;
      const file = relative(ROOT, fileURLToPath(params.url)).split(sep).join("/");
      if (/^(src|middleware|config)\//.test(file) && !/\.test\.tsx?$/.test(file)) scripts.push({ scriptId: params.scriptId, file });
    });
    this.post("Debugger.enable");
    for (const { scriptId, file } of scripts) {
      const index = this.files.push(file) - 1;
      const source: string = this.post("Debugger.getScriptSource", { scriptId }).scriptSource;
      const lineStarts = [0];
      for (let i = 0; i < source.length; i++) if (source.charCodeAt(i) === 10) lineStarts.push(i + 1);
      const at = (offset: number) => {
        let lo = 0;
        let hi = lineStarts.length - 1;
        while (lo < hi) {
          const mid = (lo + hi + 1) >> 1;
          if (lineStarts[mid]! <= offset) lo = mid;
          else hi = mid - 1;
        }
        return { scriptId, lineNumber: lo, columnNumber: offset - lineStarts[lo]! };
      };
      const starts: number[] = [];
      const bodyStart = (node: any) => {
        const body = node.body;
        if (!body) return;
        starts.push(body.type === "BlockStatement" || body.type === "FunctionBody" ? (body.body?.[0]?.start ?? body.start) : body.start);
      };
      const parsed = parseSync(`${file}.js`, source);
      new Visitor({ FunctionDeclaration: bodyStart, FunctionExpression: bodyStart, ArrowFunctionExpression: bodyStart }).visit(
        parsed.program,
      );
      for (const offset of starts)
        this.post("Debugger.setBreakpoint", { location: at(offset), condition: `globalThis.__tollgateEntered(${index})` });
    }
  }
  private post(method: string, params?: object): any {
    let out: any;
    let error: Error | null = null;
    this.session.post(method, params, (e, r) => {
      error = e;
      out = r;
    });
    if (error) throw error;
    if (out === undefined) throw new Error(`${method} did not answer synchronously`);
    return out;
  }
  arm() {
    this.entered.length = 0;
    this.moneyEntries.length = 0;
    this.armed = true;
  }
  disarm() {
    this.armed = false;
  }
  stop() {
    this.armed = false;
    this.post("Debugger.disable");
    this.session.disconnect();
    delete (globalThis as any).__tollgateEntered;
  }
}

/**
 * Records the stack at the moment each request leaves for the upstream, by whichever method sends it: `request`, and
 * the Node fast path's relay (`relay`, or `direct.relay`, whichever the transport has). A Proxy, so the wrapper does not
 * depend on the transport's exact shape; the transport's own inner calls (a relay falling back to `request`) go to the
 * transport itself and are not counted twice.
 */
function stackRecordingTransport(
  inner: UpstreamTransport,
  departures: Departure[],
  coverage: { on?: Coverage; trace?: EntryTrace },
): UpstreamTransport {
  const record = (via: string, req: { method: string; url: string }) => {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = Number.POSITIVE_INFINITY;
    const stack = new Error("departure").stack ?? "";
    Error.stackTraceLimit = limit;
    departures.push({ method: req.method, url: req.url, via, stack, ran: coverage.on?.read(), entered: coverage.trace?.entered.length });
  };
  const sending = (prefix: string): ProxyHandler<any> => ({
    get(t, prop) {
      const value = Reflect.get(t, prop, t);
      if (typeof value === "function" && (prop === "request" || prop === "relay"))
        return (req: { method: string; url: string }, ...rest: unknown[]) => {
          record(`${prefix}${prop}`, req);
          return value.call(t, req, ...rest);
        };
      if (prop === "direct" && value && typeof value === "object") return new Proxy(value, sending("direct."));
      return typeof value === "function" ? value.bind(t) : value;
    },
  });
  return new Proxy(inner, sending(""));
}

/** The shipped files (src/, middleware/, config/) of a stack's frames, one per frame, innermost first. */
function shippedFrames(stack: string): Array<{ file: string; fn: string }> {
  const frames: Array<{ file: string; fn: string }> = [];
  for (const line of stack.split("\n").slice(1)) {
    const m = /(?:\(|at (?:async )?)(?:file:\/\/)?(\/[^():]+):\d+:\d+\)?\s*$/.exec(line.trim());
    if (!m) continue;
    const file = relative(ROOT, m[1]!).split(sep).join("/");
    const fn = /^at (?:async )?(\S+) \(/.exec(line.trim())?.[1] ?? "<anonymous>";
    if (/^(src|middleware|config)\//.test(file)) frames.push({ file, fn });
  }
  return frames;
}

/** The repo files on a stack, in order (innermost first), without node_modules, Node internals and test/. */
function repoFiles(stack: string): string[] {
  const files: string[] = [];
  for (const line of stack.split("\n").slice(1)) {
    const m = /(?:\(|at (?:async )?)(?:file:\/\/)?(\/[^():]+):\d+:\d+\)?\s*$/.exec(line.trim());
    if (!m) continue;
    const file = relative(ROOT, m[1]!).split(sep).join("/");
    if (file.startsWith("..") || file.includes("node_modules/") || file.startsWith("test/")) continue;
    if (files.at(-1) !== file) files.push(file);
  }
  return files;
}

/**
 * The folder a file is in: src/<folder>/… (src/ root files are the folder "src"), each middleware/<step>/ its own
 * folder (the chain's composition, middleware/chain.ts, is "middleware"), config/ one.
 */
function folderOf(file: string): string {
  const [top, second, third] = file.split("/");
  if (top === "src") return third === undefined ? "src" : second!;
  if (top === "middleware") return third === undefined ? "middleware" : `middleware/${second}`;
  return top!;
}

/** The first layout test's folder (issue 27), printed for comparison: middleware/ counted as one folder. */
function topFolderOf(file: string): string {
  return file.startsWith("middleware/") ? "middleware" : folderOf(file);
}

interface Touched {
  /** Folder changes along the request's path, from its arrival to its last departure (the measure bounded)… */
  changes: number;
  /** …and that path, entry first (a run of functions in one folder is one step). */
  path: string[];
  /** The folders on the stacks at departure (each middleware/<step> its own), and on one stack's path. */
  folders: string[];
  stackPath: string[];
  files: string[];
  departures: string[];
  /** V8 coverage: the folders whose code ran from the request's arrival to its last departure… */
  ranToUpstream: string[];
  ranToUpstreamFiles: string[];
  /** …and during the whole request, the answer's way back included. */
  ranInAll: string[];
  /** The counts of the first layout test (middleware/ as one folder): on the stack, and by coverage. */
  old: { onStack: number; ran: number };
  /** Entries into src/payments/ from outside it over the whole request (arrival to the answer read): caller → callee. */
  moneyEntries: string[];
}

const foldersOf = (files: Iterable<string>, of = folderOf) => [...new Set([...files].map(of))].sort();

/** The folders a list of files passes through in order (a run in one folder is one step). */
function pathThrough(files: Iterable<string>): string[] {
  const path: string[] = [];
  for (const f of files) {
    const folder = folderOf(f);
    if (path.at(-1) !== folder) path.push(folder);
  }
  return path;
}

/**
 * fetch, sent once more on a new socket when the pooled one fails: a round under load can outlast the server's
 * keep-alive, and the socket it closed meanwhile fails before the request reaches the gateway (undici: "other side
 * closed", or a reset when the close crosses the send).
 */
function send(url: string, init?: RequestInit): Promise<Response> {
  return fetch(url, init).catch((err: { cause?: { code?: string } }) => {
    if (err?.cause?.code !== "UND_ERR_SOCKET" && err?.cause?.code !== "ECONNRESET") throw err;
    return fetch(url, init);
  });
}

/** Each request is measured this many times; the path with the fewest changes counts (a background job of the gateway
 * that runs meanwhile, an operator alert check say, adds its own functions to the path). */
const ROUNDS = 3;

/** The path, stacks and folders of every upstream departure made while `run` ran, for each of ROUNDS runs. */
async function touched(
  departures: Departure[],
  coverage: { on?: Coverage; trace?: EntryTrace },
  run: (round: number) => Promise<void>,
): Promise<Touched[]> {
  coverage.trace = new EntryTrace();
  const trace = coverage.trace;
  const rounds: Touched[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      coverage.on = new Coverage();
      coverage.on.read(); // resets the counters
      departures.length = 0;
      let after: Set<string>;
      try {
        trace.arm();
        await run(round);
        trace.disarm();
        after = coverage.on.read();
      } finally {
        coverage.on.stop();
        coverage.on = undefined;
      }
      rounds.push(measure(departures, trace, after));
    }
  } finally {
    trace.stop();
    coverage.trace = undefined;
  }
  return rounds;
}

/** The round with the fewest folder changes, and every round's count. */
function steadiest(rounds: Touched[]): Touched & { counts: number[] } {
  const best = rounds.reduce((a, b) => (b.changes < a.changes ? b : a));
  return { ...best, counts: rounds.map((r) => r.changes) };
}

function measure(departures: Departure[], trace: EntryTrace, after: Set<string>): Touched {
  const files = new Set<string>();
  const toUpstream = new Set<string>();
  let stackPath: string[] = [];
  for (const d of departures) {
    const onStack = repoFiles(d.stack);
    for (const f of onStack) files.add(f);
    for (const f of d.ran ?? []) toUpstream.add(f);
    stackPath = pathThrough(onStack.reverse());
  }
  const lastDeparture = Math.max(0, ...departures.map((d) => d.entered ?? 0));
  const path = pathThrough(trace.entered.slice(0, lastDeparture).map((i) => trace.files[i]!));
  return {
    changes: Math.max(0, path.length - 1),
    path,
    folders: foldersOf(files),
    stackPath,
    files: [...files].sort(),
    departures: departures.map((d) => `${d.method} ${new URL(d.url).pathname} (${d.via})`),
    ranToUpstream: foldersOf(toUpstream),
    ranToUpstreamFiles: [...toUpstream].sort(),
    ranInAll: foldersOf([...toUpstream, ...after]),
    old: { onStack: foldersOf(files, topFolderOf).length, ran: foldersOf(toUpstream, topFolderOf).length },
    moneyEntries: trace.moneyEntries.map((e) => `${e.from} → ${e.to}`),
  };
}

/**
 * Issue 52: the request enters src/payments/ once, through its door (`entry`: caller → the entry it called), and comes
 * back once: in every round that entry is made once, and in the round with the fewest entries it is the only one (a
 * background job of the gateway that runs meanwhile, an alert check say, may add its own in another round).
 */
function expectOneMoneyEntry(rounds: Touched[], entry: string) {
  for (const r of rounds)
    expect(
      r.moneyEntries.filter((e) => e === entry),
      r.moneyEntries.join("\n"),
    ).toHaveLength(1);
  const fewest = rounds.reduce((a, b) => (b.moneyEntries.length < a.moneyEntries.length ? b : a));
  expect(fewest.moneyEntries).toEqual([entry]);
}

function report(what: string, t: Touched & { counts: number[] }) {
  console.log(
    `${what}: ${t.changes} folder changes along the path, arrival to departure (rounds: ${t.counts.join(", ")}):\n  ${t.path.join(" → ")}` +
      `\n  departures: ${t.departures.join("; ")}` +
      `\n  on the stack at departure: ${t.folders.length} folders [${t.stackPath.join(" → ")}]\n    ${t.files.join("\n    ")}` +
      `\n  folders whose code ran from arrival to departure (V8 coverage): ${t.ranToUpstream.length} [${t.ranToUpstream.join(", ")}]` +
      `\n    ${t.ranToUpstreamFiles.join("\n    ")}` +
      `\n  …and during the whole request (the answer's way back too): ${t.ranInAll.length} [${t.ranInAll.join(", ")}]` +
      `\n  counted as the first layout test did (middleware/ one folder): ${t.old.onStack} on the stack, ${t.old.ran} ran` +
      `\n  entries into src/payments/ from outside it, the whole request: ${t.moneyEntries.length}${t.moneyEntries.map((e) => `\n    ${e}`).join("")}`,
  );
}

describe(`a paid search (x402, the gateway pays) changes folder at most ${PAID_SEARCH_MAX} times from entry to upstream`, () => {
  let emu: EmulatorHandle;
  let gw: RunningGateway;
  let transport: ReturnType<typeof undiciTransport>;
  const departures: Departure[] = [];
  const coverage: { on?: Coverage; trace?: EntryTrace } = {};
  let key: string;

  beforeAll(async () => {
    emu = await startEmulator({ modules: ["x402"] });
    const chain = emu.chain!;
    const wallet = await chain.createFundedWallet(10_000_000n);
    key = generateTenantKey();
    const config = parseConfig({
      server: { host: "127.0.0.1", port: 0, logLevel: "error" },
      upstream: { baseUrl: emu.controlUrl, timeoutMs: 30_000 },
      payments: { networks: [chain.network], assets: [chain.token.address], maxPerRequest: "0.50", rpc: { [chain.network]: chain.rpcUrl } },
      tenants: [{ id: "acme", scopes: ["search"], budget: { daily: "1.00" }, keys: [{ hash: await hashTenantKey(key) }] }],
    });
    transport = undiciTransport({ headersTimeoutMs: config.upstream.timeoutMs });
    gw = await startNodeGateway({
      config,
      secrets: { upstreamApiKey: emu.apiKey, walletKey: wallet.privateKey, tokenSecret: randomBytes(32).toString("hex") },
      deps: { transport: stackRecordingTransport(transport, departures, coverage) },
    });
  }, 120_000);
  afterAll(async () => {
    await gw?.close();
    await transport?.close();
    await emu?.close();
  });

  it("POST /x402/web/search, paid by the gateway: the folder changes along its path to the upstream", async () => {
    const statuses: number[] = [];
    const paid: (string | null)[] = [];
    const rounds = await touched(departures, coverage, async (round) => {
      const r = await send(`${gw.url}/x402/web/search`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        // a query of its own each round: a body seen lately is answered from the cache
        body: JSON.stringify({ query: `edge proxy caching ${round}` }),
      });
      statuses.push(r.status);
      paid.push(r.headers.get("x-tollgate-paid"));
      await r.arrayBuffer();
    });
    const t = steadiest(rounds);
    report("paid search (POST /x402/web/search)", t);
    expect(statuses).toEqual(rounds.map(() => 200));
    expect(paid).toEqual(rounds.map(() => "0.005"));
    // the challenge and the paid retry both leave through the transport
    expect(t.departures.length).toBeGreaterThanOrEqual(2);
    expect(t.folders).toContain("search");
    expect(t.ranToUpstream).toContain("search");
    expect(t.path).toContain("search");
    expect(t.changes).toBeLessThanOrEqual(PAID_SEARCH_MAX);
    // Issue 52: the money side is entered once, through its door (the payer: claim, early part, payment, figures),
    // by the search's handler, in every round; it comes back once.
    expectOneMoneyEntry(rounds, "src/search/routes.ts → src/payments/payer.ts (payX402)");
  }, 120_000);

  it("POST /api/web/search, billed to credits: the search enters src/payments/ once (the credit meter)", async () => {
    const rounds = await touched(departures, coverage, async (round) => {
      const r = await send(`${gw.url}/api/web/search`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify({ query: `credit billed ${round}` }),
      });
      expect(r.status, await r.clone().text()).toBe(200);
      expect(Number(r.headers.get("x-tollgate-paid"))).toBeGreaterThan(0);
      await r.arrayBuffer();
    });
    const t = steadiest(rounds);
    report("credit-billed search (POST /api/web/search)", t);
    expectOneMoneyEntry(rounds, "src/search/routes.ts → src/payments/credit-meter.ts (billCredits)");
  }, 120_000);
});

describe(`a runtime call (a sandbox token, a real emulator sandbox) changes folder at most ${RUNTIME_CALL_MAX} times from entry to upstream`, () => {
  let emu: EmulatorHandle;
  const gateways: Record<"on" | "off", { gw: RunningGateway; url: string; sandboxId: string }> = {} as never;
  let transport: ReturnType<typeof undiciTransport>;
  const departures: Departure[] = [];
  const coverage: { on?: Coverage; trace?: EntryTrace } = {};
  const tenantKey = generateTenantKey();

  beforeAll(async () => {
    emu = await startEmulator({ modules: ["sandboxes"] });
    const key = tenantKey;
    const runtimePort = new URL(emu.runtimeUrl).port;
    transport = undiciTransport({ headersTimeoutMs: 30_000 });
    for (const directRelay of [true, false]) {
      const config = parseConfig({
        server: { host: "127.0.0.1", port: 0, logLevel: "error", directRelay },
        upstream: { baseUrl: emu.controlUrl, allowedHosts: [`127.0.0.1:${runtimePort}`, `localhost:${runtimePort}`] },
        tenants: [{ id: "alice", keys: [{ hash: await hashTenantKey(key) }], scopes: ["sandboxes"] }],
      });
      const gw = await startNodeGateway({
        config,
        secrets: { upstreamApiKey: emu.apiKey, tokenSecret: randomBytes(32).toString("hex") },
        deps: { transport: stackRecordingTransport(transport, departures, coverage) },
      });
      const url = `http://localhost:${gw.port}`;
      // each gateway keeps its own records of what a tenant owns: a sandbox each, created through it
      const sdk = new Hyperbrowser({ apiKey: key, baseUrl: url });
      const sbx = await sdk.sandboxes.create({ imageName: "node" });
      // wait until the runtime answers (as the SDK's clients do), so the measured call is a plain one
      for (let i = 0; i < 100; i++) {
        try {
          await sbx.exec("true");
          break;
        } catch {
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      gateways[directRelay ? "on" : "off"] = { gw, url, sandboxId: sbx.id };
    }
  }, 120_000);
  afterAll(async () => {
    for (const g of Object.values(gateways)) await g.gw.close();
    await transport?.close();
    await emu?.close();
  });

  it("POST /api/sandbox, billed to credits by the chain's meter step: it enters src/payments/ once (the credit meter)", async () => {
    const { url } = gateways.on;
    const created: string[] = [];
    const rounds = await touched(departures, coverage, async () => {
      const r = await send(`${url}/api/sandbox`, {
        method: "POST",
        headers: { "x-api-key": tenantKey, "content-type": "application/json" },
        body: JSON.stringify({ imageName: "node" }),
      });
      expect(r.status, await r.clone().text()).toBe(200);
      created.push(((await r.json()) as { id: string }).id);
    });
    const t = steadiest(rounds);
    report("credit-billed sandbox creation (POST /api/sandbox)", t);
    expectOneMoneyEntry(rounds, "middleware/meter/index.ts → src/payments/credit-meter.ts (billCredits)");
    for (const id of created) await fetch(`${url}/api/sandbox/${id}/stop`, { method: "PUT", headers: { "x-api-key": tenantKey } });
  }, 180_000);

  for (const relay of ["on", "off"] as const) {
    it(`GET /sandbox/<id>/processes with the gateway's sandbox token (server.directRelay ${relay})`, async () => {
      const { url, sandboxId } = gateways[relay];
      // the gateway's own sandbox token, as the SDK gets it from the sandbox detail
      const r = await send(`${url}/api/sandbox/${sandboxId}`, { headers: { "x-api-key": tenantKey } });
      expect(r.status).toBe(200);
      const { token } = (await r.json()) as { token: string };
      const statuses: number[] = [];
      const rounds = await touched(departures, coverage, async () => {
        const r = await send(`${url}/sandbox/${sandboxId}/processes`, { headers: { authorization: `Bearer ${token}` } });
        statuses.push(r.status);
        await r.arrayBuffer();
      });
      const t = steadiest(rounds);
      report(`runtime call (GET /sandbox/<id>/processes, directRelay ${relay})`, t);
      expect(statuses).toEqual(rounds.map(() => 200));
      expect(t.departures.some((d) => d.startsWith("GET /sandbox/"))).toBe(true);
      expect(t.folders).toContain("sandboxes");
      expect(t.ranToUpstream).toContain("sandboxes");
      expect(t.path).toContain("sandboxes");
      expect(t.changes).toBeLessThanOrEqual(RUNTIME_CALL_MAX);
    }, 60_000);
  }
});
