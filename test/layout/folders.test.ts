// How many folders a request touches from entry to upstream (issue 27, "must show"): the gateway runs in-process on
// 127.0.0.1 in front of the emulator, its transport wrapped so that when a request is handed to the transport (or to the
// transport's direct relay, the Node fast path) the whole stack is recorded, async frames included. Frames are mapped
// to repo files (vitest runs the .ts sources), node_modules, Node internals and this test's own wrapper dropped, and each
// file counted by folder: the top-level folder under src/ (src/<folder>/…; src/ root files are the folder "src"),
// middleware/ as one folder (the chain's home), config/ as one. Two counts, both bounded: the folders on the stack when
// the request leaves, and (V8 precise coverage) every folder whose code ran from the request's arrival to its departure.
import { randomBytes } from "node:crypto";
import { Session } from "node:inspector";
import { relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { parseConfig } from "../../config/load.js";
import { generateTenantKey, hashTenantKey } from "../../middleware/identify/tenants.js";
import { startNodeGateway, type RunningGateway } from "../../src/platform/node.js";
import { undiciTransport } from "../../src/platform/node/undici-transport.js";
import type { UpstreamTransport } from "../../src/platform/transport.js";

const ROOT = process.cwd();
const PAID_SEARCH_MAX = 6;
const RUNTIME_CALL_MAX = 4;

interface Departure {
  /** Shipped files whose code ran since the measure began, up to this departure (when coverage is on). */
  ran?: Set<string>;
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
 * Records the stack at the moment each request leaves for the upstream, by whichever method sends it: `request`, and
 * the Node fast path's relay (`relay`, or `direct.relay`, whichever the transport has). A Proxy, so the wrapper does not
 * depend on the transport's exact shape; the transport's own inner calls (a relay falling back to `request`) go to the
 * transport itself and are not counted twice.
 */
function stackRecordingTransport(inner: UpstreamTransport, departures: Departure[], coverage: { on?: Coverage }): UpstreamTransport {
  const record = (via: string, req: { method: string; url: string }) => {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = Number.POSITIVE_INFINITY;
    const stack = new Error("departure").stack ?? "";
    Error.stackTraceLimit = limit;
    departures.push({ method: req.method, url: req.url, via, stack, ran: coverage.on?.read() });
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

function folderOf(file: string): string {
  const [top, second, third] = file.split("/");
  if (top === "src") return third === undefined ? "src" : second!;
  return top!;
}

interface Touched {
  /** Folders on the stacks at departure (the measure the bounds apply to). */
  folders: string[];
  files: string[];
  departures: string[];
  /** For comparison (V8 coverage): the folders whose code ran from the request's arrival to its last departure… */
  ranToUpstream: string[];
  ranToUpstreamFiles: string[];
  /** …and during the whole request, the answer's way back included. */
  ranInAll: string[];
}

const foldersOf = (files: Iterable<string>) => [...new Set([...files].map(folderOf))].sort();

/** The folders (and files) on the stacks of every upstream departure made while `run` ran. */
async function touched(departures: Departure[], coverage: { on?: Coverage }, run: () => Promise<void>): Promise<Touched> {
  coverage.on = new Coverage();
  coverage.on.read(); // resets the counters
  departures.length = 0;
  let after: Set<string>;
  try {
    await run();
    after = coverage.on.read();
  } finally {
    coverage.on.stop();
    coverage.on = undefined;
  }
  const files = new Set<string>();
  const toUpstream = new Set<string>();
  for (const d of departures) {
    for (const f of repoFiles(d.stack)) files.add(f);
    for (const f of d.ran ?? []) toUpstream.add(f);
  }
  return {
    folders: foldersOf(files),
    files: [...files].sort(),
    departures: departures.map((d) => `${d.method} ${new URL(d.url).pathname} (${d.via})`),
    ranToUpstream: foldersOf(toUpstream),
    ranToUpstreamFiles: [...toUpstream].sort(),
    ranInAll: foldersOf([...toUpstream, ...after]),
  };
}

function report(what: string, t: Touched) {
  console.log(
    `${what}: ${t.folders.length} folders on the stack at departure [${t.folders.join(", ")}]` +
      `\n  departures: ${t.departures.join("; ")}\n  files on the stack:\n    ${t.files.join("\n    ")}` +
      `\n  folders whose code ran from arrival to departure (V8 coverage): ${t.ranToUpstream.length} [${t.ranToUpstream.join(", ")}]` +
      `\n    ${t.ranToUpstreamFiles.join("\n    ")}` +
      `\n  …and during the whole request (the answer's way back too): ${t.ranInAll.length} [${t.ranInAll.join(", ")}]`,
  );
}

describe("a paid search (x402, the gateway pays) touches at most 6 folders from entry to upstream", () => {
  let emu: EmulatorHandle;
  let gw: RunningGateway;
  let transport: ReturnType<typeof undiciTransport>;
  const departures: Departure[] = [];
  const coverage: { on?: Coverage } = {};
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

  it("POST /x402/web/search, paid by the gateway: the folders on the stack when it leaves for the upstream", async () => {
    let status = 0;
    let paid: string | null = null;
    const t = await touched(departures, coverage, async () => {
      const r = await fetch(`${gw.url}/x402/web/search`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify({ query: "edge proxy caching" }),
      });
      status = r.status;
      paid = r.headers.get("x-tollgate-paid");
      await r.arrayBuffer();
    });
    report("paid search (POST /x402/web/search)", t);
    expect(status).toBe(200);
    expect(paid).toBe("0.005");
    // the challenge and the paid retry both leave through the transport
    expect(t.departures.length).toBeGreaterThanOrEqual(2);
    expect(t.folders).toContain("search");
    expect(t.folders.length).toBeLessThanOrEqual(PAID_SEARCH_MAX);
    // The stricter count: every folder whose code ran from the request's arrival to its departure, not only those
    // still on the stack.
    expect(t.ranToUpstream).toContain("search");
    expect(t.ranToUpstream.length).toBeLessThanOrEqual(PAID_SEARCH_MAX);
  }, 60_000);
});

describe("a runtime call (a sandbox token, a real emulator sandbox) touches at most 4 folders from entry to upstream", () => {
  let emu: EmulatorHandle;
  const gateways: Record<"on" | "off", { gw: RunningGateway; url: string; sandboxId: string }> = {} as never;
  let transport: ReturnType<typeof undiciTransport>;
  const departures: Departure[] = [];
  const coverage: { on?: Coverage } = {};
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

  for (const relay of ["on", "off"] as const) {
    it(`GET /sandbox/<id>/processes with the gateway's sandbox token (server.directRelay ${relay})`, async () => {
      const { url, sandboxId } = gateways[relay];
      // the gateway's own sandbox token, as the SDK gets it from the sandbox detail
      const r = await fetch(`${url}/api/sandbox/${sandboxId}`, { headers: { "x-api-key": tenantKey } });
      expect(r.status).toBe(200);
      const { token } = (await r.json()) as { token: string };
      let status = 0;
      const t = await touched(departures, coverage, async () => {
        const r = await fetch(`${url}/sandbox/${sandboxId}/processes`, {
          headers: { authorization: `Bearer ${token}` },
        });
        status = r.status;
        await r.arrayBuffer();
      });
      report(`runtime call (GET /sandbox/<id>/processes, directRelay ${relay})`, t);
      expect(status).toBe(200);
      expect(t.departures.some((d) => d.startsWith("GET /sandbox/"))).toBe(true);
      expect(t.folders).toContain("sandboxes");
      expect(t.folders.length).toBeLessThanOrEqual(RUNTIME_CALL_MAX);
      expect(t.ranToUpstream).toContain("sandboxes");
      expect(t.ranToUpstream.length).toBeLessThanOrEqual(RUNTIME_CALL_MAX);
    }, 60_000);
  }
});
