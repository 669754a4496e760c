// The local upstream: control plane, runtime plane and x402, composed from independent modules on two listeners.
import { createServer, type Server } from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { Hono } from "hono";
import { getRequestListener } from "@hono/node-server";
import type { ChainHandle, EmulatorContext, EmulatorModule } from "./types.js";
import { createSandboxModule } from "./sandboxes/index.js";
import { createSessionModule } from "./sessions/index.js";
import { createX402Module, FACILITATOR_PATH, type FacilitatorSwitches, type X402Demand, type X402Prices } from "./x402/index.js";
import { createJobsModule } from "./jobs/index.js";
import { SearchEngine } from "./search/engine.js";
import { startChain } from "./chain/index.js";
import { createTeamModule } from "./team.js";
import { guardDir, releaseDir } from "./reaper.js";
import { CreditMeter, type CreditSchedule } from "./credits.js";
import { DEFAULT_ACCOUNT, EmulatorAccounts, type EmulatorAccountSpec } from "./accounts.js";
import { SandboxInternet } from "./sandboxes/outbound.js";

export interface EmulatorOptions {
  host?: string;
  controlPort?: number;
  runtimePort?: number;
  apiKey?: string;
  /**
   * More accounts besides the default one (`apiKey`, id "default"), each its own key, resources, concurrency limits
   * and credit usage (./accounts.ts).
   */
  accounts?: EmulatorAccountSpec[];
  runtimeTokenTtlSeconds?: number;
  /** Start the local chain (needed for /x402). A chain handle may be passed instead to share one. */
  chain?: boolean | ChainHandle;
  /** Which halves to run; all by default. Tests of one half skip the others to start faster. */
  modules?: Array<"sandboxes" | "sessions" | "x402" | "jobs">;
  prices?: Partial<X402Prices>;
  /** What the paid routes demand (scheme per route), what `upto` settles, `settlement_pending`, lost answers. */
  x402?: Partial<X402Demand>;
  /** The credit schedule (emulator/credits.ts): what sessions, sandboxes, jobs and searches cost the team. */
  credits?: Partial<CreditSchedule>;
  log?: (event: string, fields?: Record<string, unknown>) => void;
  /** Keep every request it receives (method, URL, headers) in `received`: for tests of what a gateway forwards. */
  record?: boolean;
}

/** A request the emulator received (with `record`). */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  /** When it arrived (`performance.now()` of the emulator's process): for tests timing what comes before a call. */
  at: number;
}

export interface EmulatorHandle {
  controlUrl: string;
  runtimeUrl: string;
  /** Where presigned uploads go (object storage, a host of its own). */
  storageUrl: string;
  apiKey: string;
  chain?: ChainHandle;
  /** The x402 half's demand (with the x402 module): change it and the next request follows (emulator/x402/schemes.ts). */
  x402?: X402Demand;
  /** The local facilitator's HTTP face (`<controlUrl>/_emulator/facilitator`, with the x402 module) and its switches. */
  facilitator?: { url: string; switches: FacilitatorSwitches };
  modules: EmulatorModule[];
  /** What it received, oldest first (with `record`; the first 10,000). */
  received: ReceivedRequest[];
  /** The team's credit meter: its schedule and running usage (per account: `credits.usage(id)`). */
  credits: CreditMeter;
  /** The accounts (the default one first), their keys, and set() to make one refuse, fail or slow down. */
  accounts: EmulatorAccounts;
  /**
   * What sandboxes reach as real ones reach the internet (sandboxes/outbound.ts): `internet.add("localhost:8787")`
   * makes a gateway's port reachable from sandboxes started from then on, as their egress lists allow.
   */
  internet: SandboxInternet;
  close(): Promise<void>;
}

function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const addr = server.address();
      resolve(typeof addr === "object" && addr ? addr.port : port);
    });
  });
}

function jsonError(status: number, message: string, code: string) {
  return new Response(JSON.stringify({ message, code }), { status, headers: { "content-type": "application/json" } });
}

export async function startEmulator(opts: EmulatorOptions = {}): Promise<EmulatorHandle> {
  const host = opts.host ?? "127.0.0.1";
  const apiKey = opts.apiKey ?? `emu_${randomBytes(18).toString("base64url")}`;
  const stateDir = await mkdtemp(join(tmpdir(), "tollgate-emulator-"));
  // Removed by close(); if this process dies first, by the watchdog.
  guardDir(stateDir);
  let controlOrigin = "";
  let runtimeOrigin = "";
  let storageOrigin = "";
  const log = opts.log ?? (() => {});
  const accounts = new EmulatorAccounts(apiKey, opts.accounts);
  const credits = new CreditMeter(opts.credits);
  const internet = new SandboxInternet();
  if (accounts.several)
    credits.accountOf = { current: () => accounts.currentAccount(), owner: (id) => accounts.ownerOf(id), fallback: DEFAULT_ACCOUNT };
  const ctx: EmulatorContext = {
    apiKey,
    controlOrigin: () => controlOrigin,
    runtimeOrigin: () => runtimeOrigin,
    storageOrigin: () => storageOrigin,
    tokenSecret: randomBytes(32),
    runtimeTokenTtlSeconds: opts.runtimeTokenTtlSeconds ?? 900,
    stateDir,
    log,
    credits,
    accounts,
    internet,
  };
  const wanted = new Set(opts.modules ?? ["sandboxes", "sessions", "x402", "jobs"]);
  const modules: EmulatorModule[] = [];
  let chain: ChainHandle | undefined;
  let demand: X402Demand | undefined;
  let facilitatorSwitches: FacilitatorSwitches | undefined;
  let ownsChain = false;
  const closeAll = async () => {
    for (const m of modules.reverse()) await m.close().catch((e) => log("module.close.error", { module: m.name, error: String(e) }));
    if (chain && ownsChain) await chain.close().catch(() => {});
    await rm(stateDir, { recursive: true, force: true }).catch(() => {});
    releaseDir(stateDir);
  };
  // The team's own routes (credit info) cost nothing to start and come with every half.
  modules.push(createTeamModule(ctx));
  try {
    // The sandbox images and the chain take the longest to prepare: start them side by side.
    const startingChain =
      wanted.has("x402") && typeof opts.chain !== "object" && opts.chain !== false
        ? startChain({ host, log }).then((c) => ((chain = c), (ownsChain = true), c))
        : undefined;
    const sandboxes = wanted.has("sandboxes") ? createSandboxModule(ctx) : undefined;
    const [sbx] = await Promise.allSettled([sandboxes, startingChain]).then((rs) => {
      const failed = rs.find((r) => r.status === "rejected");
      if (failed) {
        // Whichever half did start is closed by closeAll below.
        if (rs[0].status === "fulfilled" && rs[0].value) modules.push(rs[0].value);
        throw (failed as PromiseRejectedResult).reason;
      }
      return rs.map((r) => (r as PromiseFulfilledResult<any>).value);
    });
    if (sbx) modules.push(sbx);
    let sessions: Awaited<ReturnType<typeof createSessionModule>> | undefined;
    if (wanted.has("sessions") || wanted.has("x402") || wanted.has("jobs")) {
      sessions = await createSessionModule(ctx);
      modules.push(sessions);
      const live = sessions.sessions;
      accounts.sessionLive = (id) => live.record(id)?.status === "active";
    }
    // One search index for both: the jobs' local web serves the same corpus the search returns.
    const engine = wanted.has("jobs") || wanted.has("x402") ? new SearchEngine() : undefined;
    // Jobs mount before x402 so that their /api/web/fetch (a real page load) answers in place of the corpus one.
    if (wanted.has("jobs")) {
      const jobs = await createJobsModule(ctx, { sessions: sessions!.sessions, engine });
      modules.push(jobs);
      // Sessions' browsers resolve the local web's hosts as the job runners reach them.
      sessions!.sessions.localWebArgs = jobs.web.browserArgs;
    }
    if (wanted.has("x402")) {
      if (typeof opts.chain === "object") chain = opts.chain;
      if (chain) {
        const x402 = await createX402Module(ctx, {
          chain,
          sessions: sessions!.service,
          prices: opts.prices,
          searchEngine: engine,
          demand: opts.x402,
        });
        demand = x402.demand;
        facilitatorSwitches = x402.facilitatorSwitches;
        modules.push(x402);
      }
    }
  } catch (err) {
    await closeAll();
    throw err;
  }

  const control = new Hono();
  const runtime = new Hono();
  const storage = new Hono();
  const received: ReceivedRequest[] = [];
  if (opts.record) {
    for (const app of [control, runtime])
      app.use(async function recordRequest(c, next) {
        if (received.length < 10_000)
          received.push({
            method: c.req.method,
            url: c.req.url,
            headers: Object.fromEntries(c.req.raw.headers.entries()),
            at: performance.now(),
          });
        await next();
      });
  }
  // Each key's account first: its mode, its limits, its own resources (./accounts.ts).
  control.put("/_emulator/accounts/:id", accounts.controlRoute());
  control.use(accounts.middleware());
  for (const m of modules) {
    if (m.control) control.route("/", m.control);
    if (m.runtime) runtime.route("/", m.runtime);
    if (m.storage) storage.route("/", m.storage);
  }
  for (const app of [control, runtime, storage]) {
    app.notFound(() => jsonError(404, "Not found", "not_found"));
    app.onError((err) => {
      log("emulator.error", { error: String(err?.stack ?? err) });
      return jsonError(500, "Internal emulator error", "internal_error");
    });
  }

  const controlServer = createServer(getRequestListener(control.fetch));
  const runtimeServer = createServer(getRequestListener(runtime.fetch));
  const storageServer = createServer(getRequestListener(storage.fetch));
  const refuseUpgrade = (socket: import("node:stream").Duplex) => {
    socket.end(
      "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n" +
        JSON.stringify({ message: "Not found", code: "not_found" }),
    );
  };
  controlServer.on("upgrade", (req, socket, head) => {
    for (const m of modules) if (m.upgradeControl?.(req, socket, head)) return;
    refuseUpgrade(socket);
  });
  runtimeServer.on("upgrade", (req, socket, head) => {
    for (const m of modules) if (m.upgradeRuntime?.(req, socket, head)) return;
    refuseUpgrade(socket);
  });
  const cp = await listen(controlServer, host, opts.controlPort ?? 0);
  const rp = await listen(runtimeServer, host, opts.runtimePort ?? 0);
  const sp = await listen(storageServer, host, 0);
  controlOrigin = `http://${host}:${cp}`;
  runtimeOrigin = `http://${host}:${rp}`;
  storageOrigin = `http://${host}:${sp}`;
  log("emulator.ready", { control: controlOrigin, runtime: runtimeOrigin });

  let closed = false;
  return {
    controlUrl: controlOrigin,
    runtimeUrl: runtimeOrigin,
    storageUrl: storageOrigin,
    apiKey,
    chain,
    x402: demand,
    facilitator: facilitatorSwitches ? { url: `${controlOrigin}${FACILITATOR_PATH}`, switches: facilitatorSwitches } : undefined,
    modules,
    received,
    credits: ctx.credits!,
    accounts,
    internet,
    async close() {
      if (closed) return;
      closed = true;
      // server.close() stays pending while upgraded (WebSocket) sockets are open, and only the modules can end those:
      // stop accepting, close the modules, then wait for the servers.
      const serversClosed = Promise.all([
        new Promise((r) => controlServer.close(() => r(null))),
        new Promise((r) => runtimeServer.close(() => r(null))),
        new Promise((r) => storageServer.close(() => r(null))),
      ]);
      controlServer.closeAllConnections?.();
      runtimeServer.closeAllConnections?.();
      storageServer.closeAllConnections?.();
      await closeAll();
      await serversClosed;
    },
  };
}

// What the gateway's CLI (`tollgate emulator`, `tollgate dev --worker`) uses besides the emulator itself.
export { parseCreditSchedule, type CreditSchedule } from "./credits.js";
export type { AccountMode, EmulatorAccountSpec } from "./accounts.js";
export { guardDir, guardGroup, releaseDir, releaseGroup } from "./reaper.js";
