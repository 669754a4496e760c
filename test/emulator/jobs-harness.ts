// Starts the emulator with the jobs half (and the sessions it needs) for the job tests, with an SDK client and raw calls.
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import type { JobsModule } from "../../emulator/jobs/index.js";
import type { BrowserSessions } from "../../emulator/sessions/session-service.js";

export const SITE = "http://web.emulator.test";

export interface JobsEmulator {
  emu: EmulatorHandle;
  client: Hyperbrowser;
  jobs: JobsModule;
  sessions: BrowserSessions;
  /** A raw control-plane call with the API key, for what the SDK hides (status codes, paging, bad bodies). */
  api(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

export async function startJobsEmulator(): Promise<JobsEmulator> {
  const emu = await startEmulator({ modules: ["jobs"] });
  const jobs = emu.modules.find((m) => m.name === "jobs") as JobsModule;
  const sessions = (emu.modules.find((m) => m.name === "sessions") as unknown as { sessions: BrowserSessions }).sessions;
  const client = new Hyperbrowser({ apiKey: emu.apiKey, baseUrl: emu.controlUrl });
  return {
    emu,
    client,
    jobs,
    sessions,
    async api(method, path, body, headers = { "x-api-key": emu.apiKey }) {
      const res = await fetch(emu.controlUrl + path, {
        method,
        headers: { ...headers, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    },
    close: () => emu.close(),
  };
}

/** Polls `read` every 50 ms until `done` holds (bounded), returning every distinct value seen in order. */
export async function watch<T>(read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 30_000): Promise<T[]> {
  const seen: T[] = [];
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const v = await read();
    if (seen.length === 0 || JSON.stringify(seen[seen.length - 1]) !== JSON.stringify(v)) seen.push(v);
    if (done(v)) return seen;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`not done after ${timeoutMs} ms; seen ${JSON.stringify(seen)}`);
}
