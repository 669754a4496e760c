// Shared set-up for the sandbox emulator tests: one emulator (sandboxes only) and the unmodified SDK pointed at it.
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { request } from "undici";
import { startEmulator, type EmulatorHandle, type EmulatorOptions } from "../../emulator/index.js";

export type SandboxHandle = Awaited<ReturnType<Hyperbrowser["sandboxes"]["create"]>>;

export interface SandboxHarness {
  emu: EmulatorHandle;
  hb: Hyperbrowser;
  /** Host PIDs of a sandbox (bwrap + everything in its PID namespace), via the module's test hook. */
  hostPids(id: string): Promise<number[]>;
  /** The host directory holding a sandbox's root, via the module's test hook. */
  hostRootDir(id: string): string;
  close(): Promise<void>;
}

export async function startSandboxHarness(opts: EmulatorOptions = {}): Promise<SandboxHarness> {
  // Errors and warnings only: a failing test then shows why the emulator answered 500.
  const log = (event: string, fields?: Record<string, unknown>) => {
    if (/error|warn|unavailable|degraded/.test(event) || fields?.level === "warn") console.error(event, fields);
  };
  const emu = await startEmulator({ log, ...opts, modules: ["sandboxes"] });
  const hb = new Hyperbrowser({ apiKey: emu.apiKey, baseUrl: emu.controlUrl });
  const mod = emu.modules.find((m) => m.name === "sandboxes") as unknown as {
    hostPids(id: string): Promise<number[]>;
    hostRootDir(id: string): string;
  };
  return { emu, hb, hostPids: (id) => mod.hostPids(id), hostRootDir: (id) => mod.hostRootDir(id), close: () => emu.close() };
}

/** Raw control-plane call with the API key, for status codes the SDK hides behind exceptions. */
export async function control(emu: EmulatorHandle, method: string, path: string, body?: unknown) {
  const res = await request(`${emu.controlUrl}${path}`, {
    method: method as any,
    headers: { "x-api-key": emu.apiKey, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

/** A request to an exposed port: connect to the runtime listener, name the sandbox host in Host. */
export async function exposedRequest(
  emu: EmulatorHandle,
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
) {
  const u = new URL(url);
  const res = await request(`${emu.runtimeUrl}${u.pathname}${u.search}`, {
    method: (init.method ?? "GET") as any,
    headers: { host: u.host, ...(init.headers ?? {}) },
    body: init.body,
  });
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
