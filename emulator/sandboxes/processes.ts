// Real processes inside a sandbox: start, output replay buffer, wait, signals, stdin, and the wire shapes for them.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { StringDecoder } from "node:string_decoder";
import { constants } from "node:os";
import { ApiError, badRequest, notFound } from "./errors.js";
import { SANDBOX_HOME, SANDBOX_USER } from "./images.js";
import { signalGroup, type Jail, type SandboxUser } from "./jail.js";

export type ProcessStatus = "queued" | "running" | "exited" | "failed" | "killed" | "timed_out";
export interface OutputChunk {
  seq: number;
  stream: "stdout" | "stderr" | "system";
  data: string;
  timestamp: number;
}
export type ProcessEvent = { type: "output"; chunk: OutputChunk } | { type: "done" };

/** Output kept for SSE replay, per process; older chunks fall out and `from_seq` before them gets 410. */
export const REPLAY_WINDOW_BYTES = 1024 * 1024;
/** Output kept for the final `stdout`/`stderr` of a result. */
const RESULT_CAP_BYTES = 8 * 1024 * 1024;

export interface StartParams {
  command?: unknown;
  cwd?: unknown;
  env?: unknown;
  timeoutMs?: unknown;
  timeout_sec?: unknown;
  runAs?: unknown;
}

export function resolveUser(runAs: unknown): SandboxUser {
  if (runAs === undefined || runAs === null || runAs === "" || runAs === SANDBOX_USER) return "user";
  if (runAs === "root") return "root";
  throw badRequest(`unknown user ${JSON.stringify(runAs)} (known: ${SANDBOX_USER}, root)`, "unknown_user");
}

export function sandboxEnv(user: SandboxUser, extra: unknown): Record<string, string> {
  const home = user === "root" ? "/root" : SANDBOX_HOME;
  const env: Record<string, string> = {
    PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    HOME: home,
    USER: user === "root" ? "root" : SANDBOX_USER,
    LOGNAME: user === "root" ? "root" : SANDBOX_USER,
    SHELL: "/bin/bash",
    LANG: "C.UTF-8",
  };
  if (extra && typeof extra === "object") for (const [k, v] of Object.entries(extra)) if (v !== undefined && v !== null) env[k] = String(v);
  return env;
}

const SIGNALS: Record<string, NodeJS.Signals> = {
  TERM: "SIGTERM",
  KILL: "SIGKILL",
  INT: "SIGINT",
  HUP: "SIGHUP",
  QUIT: "SIGQUIT",
  USR1: "SIGUSR1",
  USR2: "SIGUSR2",
  STOP: "SIGSTOP",
  CONT: "SIGCONT",
};
export function parseSignal(sig: unknown, fallback: NodeJS.Signals): NodeJS.Signals {
  if (sig === undefined || sig === null || sig === "") return fallback;
  const name = String(sig).toUpperCase().replace(/^SIG/, "");
  const found = SIGNALS[name];
  if (!found) throw badRequest(`unknown signal ${JSON.stringify(sig)}`, "invalid_signal");
  return found;
}

export function timeoutOf(body: { timeoutMs?: unknown; timeout_sec?: unknown }): number | undefined {
  if (typeof body.timeoutMs === "number" && body.timeoutMs > 0) return body.timeoutMs;
  if (typeof body.timeout_sec === "number" && body.timeout_sec > 0) return body.timeout_sec * 1000;
  return undefined;
}

export class SandboxProcess {
  status: ProcessStatus = "running";
  exitCode: number | null = null;
  completedAt?: number;
  error?: string;
  readonly startedAt = Date.now();
  private chunks: OutputChunk[] = [];
  private chunkBytes = 0;
  private nextSeq = 1;
  private out = { stdout: "", stderr: "" };
  private readonly listeners = new Set<(e: ProcessEvent) => void>();
  readonly done: Promise<void>;
  private timedOut = false;

  constructor(
    readonly id: string,
    readonly command: string,
    readonly cwd: string,
    private readonly child: ChildProcess,
    timeoutMs: number | undefined,
  ) {
    const decoders = { stdout: new StringDecoder("utf8"), stderr: new StringDecoder("utf8") };
    child.stdout!.on("data", (d: Buffer) => this.emit("stdout", decoders.stdout.write(d)));
    child.stderr!.on("data", (d: Buffer) => this.emit("stderr", decoders.stderr.write(d)));
    child.stdin!.on("error", () => {});
    const timer = timeoutMs ? setTimeout(() => ((this.timedOut = true), this.signal("SIGKILL")), timeoutMs) : undefined;
    this.done = new Promise((resolve) => {
      const finish = (code: number | null, signal: NodeJS.Signals | null, error?: string) => {
        if (this.completedAt) return;
        clearTimeout(timer);
        this.completedAt = Date.now();
        this.exitCode = code ?? (signal ? 128 + (constants.signals[signal] ?? 0) : null);
        this.status = error ? "failed" : this.timedOut ? "timed_out" : signal ? "killed" : "exited";
        if (error) this.error = error;
        for (const l of this.listeners) l({ type: "done" });
        this.listeners.clear();
        resolve();
      };
      child.once("error", (e) => finish(null, null, e.message));
      child.once("close", (code, signal) => finish(code, signal));
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  private emit(stream: "stdout" | "stderr" | "system", data: string): void {
    if (!data) return;
    if (stream !== "system" && this.out[stream].length < RESULT_CAP_BYTES) this.out[stream] += data;
    const chunk: OutputChunk = { seq: this.nextSeq++, stream, data, timestamp: Date.now() };
    this.chunks.push(chunk);
    this.chunkBytes += data.length;
    while (this.chunkBytes > REPLAY_WINDOW_BYTES && this.chunks.length > 1) this.chunkBytes -= this.chunks.shift()!.data.length;
    for (const l of this.listeners) l({ type: "output", chunk });
  }

  /** Chunks from `fromSeq` on (inclusive), or a 410 when some of them already fell out of the replay window. */
  replay(fromSeq: number): OutputChunk[] {
    const oldest = this.chunks[0]?.seq ?? this.nextSeq;
    if (fromSeq < oldest && fromSeq < this.nextSeq && oldest > 1) {
      throw new ApiError(410, "replay_window_expired", `Replay window expired: oldest retained seq is ${oldest}, requested ${fromSeq}`);
    }
    return this.chunks.filter((c) => c.seq >= fromSeq);
  }

  subscribe(fn: (e: ProcessEvent) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  get running(): boolean {
    return this.completedAt === undefined;
  }

  signal(sig: NodeJS.Signals): void {
    if (this.running && this.child.pid) signalGroup(this.child.pid, sig);
  }

  writeStdin(data: Buffer | undefined, eof: boolean): void {
    if (!this.running || !this.child.stdin || this.child.stdin.writableEnded)
      throw new ApiError(409, "stdin_closed", "Process stdin is closed");
    if (data?.length) this.child.stdin.write(data);
    if (eof) this.child.stdin.end();
  }

  summary() {
    return {
      id: this.id,
      status: this.status,
      command: this.command,
      cwd: this.cwd,
      pid: this.pid,
      exit_code: this.exitCode,
      started_at: this.startedAt,
      completed_at: this.completedAt,
    };
  }

  result() {
    return {
      id: this.id,
      status: this.status,
      exit_code: this.exitCode,
      stdout: this.out.stdout,
      stderr: this.out.stderr,
      started_at: this.startedAt,
      completed_at: this.completedAt,
      ...(this.error ? { error: this.error } : {}),
    };
  }
}

export class ProcessTable {
  private readonly procs = new Map<string, SandboxProcess>();

  constructor(private readonly jail: Jail) {}

  start(params: StartParams): SandboxProcess {
    if (typeof params.command !== "string" || !params.command.trim()) throw badRequest("command is required");
    const user = resolveUser(params.runAs);
    const cwd = typeof params.cwd === "string" && params.cwd ? params.cwd : user === "root" ? "/root" : SANDBOX_HOME;
    const argv = [...this.jail.enterArgv(user, cwd), "/bin/bash", "-c", params.command];
    const child = spawn(argv[0], argv.slice(1), { detached: true, stdio: ["pipe", "pipe", "pipe"], env: sandboxEnv(user, params.env) });
    const id = `proc_${randomBytes(9).toString("base64url")}`;
    const proc = new SandboxProcess(id, params.command, cwd, child, timeoutOf(params));
    this.jail.track(child.pid);
    void proc.done.then(() => this.jail.untrack(child.pid));
    this.procs.set(id, proc);
    return proc;
  }

  get(id: string): SandboxProcess {
    const p = this.procs.get(id);
    if (!p) throw notFound(`process ${id}`);
    return p;
  }

  list(q: { status?: string; limit?: string; cursor?: string; created_after?: string; created_before?: string }) {
    const statuses = q.status
      ? new Set(
          q.status
            .split(",")
            .map((s) => s.trim())
            .filter(Boolean),
        )
      : undefined;
    const after = q.created_after ? toMs(q.created_after) : undefined;
    const before = q.created_before ? toMs(q.created_before) : undefined;
    const all = [...this.procs.values()].filter(
      (p) =>
        (!statuses || statuses.has(p.status)) &&
        (after === undefined || p.startedAt >= after) &&
        (before === undefined || p.startedAt <= before),
    );
    const offset = q.cursor ? Number.parseInt(q.cursor, 10) || 0 : 0;
    const limit = Math.min(Math.max(Number.parseInt(q.limit ?? "50", 10) || 50, 1), 500);
    const page = all.slice(offset, offset + limit);
    const next = offset + limit < all.length ? String(offset + limit) : undefined;
    return { data: page.map((p) => p.summary()), ...(next ? { next_cursor: next } : {}) };
  }

  killAll(): void {
    for (const p of this.procs.values()) p.signal("SIGKILL");
  }
}

function toMs(v: string): number {
  const n = Number(v);
  if (Number.isFinite(n)) return n;
  const d = Date.parse(v);
  if (Number.isNaN(d)) throw badRequest(`invalid timestamp ${v}`);
  return d;
}

/** Resolves when `p` is done or `timeoutMs` passed; in the latter case a 408 the SDK knows. */
export async function waitFor(p: SandboxProcess, timeoutMs: number | undefined): Promise<void> {
  if (!p.running) return;
  if (!timeoutMs) return p.done;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ApiError(408, "timeout", `Process ${p.id} wait timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([p.done, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
