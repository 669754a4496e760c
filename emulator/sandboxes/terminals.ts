// Real PTYs inside a sandbox (@lydell/node-pty through nsenter): buffered output with cursors, resize, wait, kill.
import { spawn as spawnPty, type IPty } from "@lydell/node-pty";
import { randomBytes } from "node:crypto";
import { ApiError, badRequest, notFound } from "./errors.js";
import { SANDBOX_HOME } from "./images.js";
import { signalGroup, type Jail } from "./jail.js";
import { parseSignal, resolveUser, sandboxEnv } from "./processes.js";

export interface PtyChunk {
  seq: number;
  data: string; // base64
  timestamp: number;
}
export type PtyEvent = { type: "output"; chunk: PtyChunk } | { type: "exit" };

/** PTY output kept for `includeOutput` and for attach cursors. */
const PTY_BUFFER_BYTES = 1024 * 1024;

export class Terminal {
  running = true;
  exitCode: number | null = null;
  timedOut = false;
  finishedAt?: number;
  readonly startedAt = Date.now();
  private chunks: Array<PtyChunk & { bytes: number }> = [];
  private bytes = 0;
  private nextSeq = 1;
  private readonly listeners = new Set<(e: PtyEvent) => void>();
  readonly done: Promise<void>;

  constructor(
    readonly id: string,
    readonly command: string,
    readonly args: string[],
    readonly cwd: string,
    private readonly pty: IPty,
    public rows: number,
    public cols: number,
    timeoutMs: number | undefined,
  ) {
    pty.onData((d) => this.push(Buffer.from(d, "utf8")));
    const timer = timeoutMs ? setTimeout(() => ((this.timedOut = true), this.signal("SIGKILL")), timeoutMs) : undefined;
    this.done = new Promise((resolve) => {
      pty.onExit(({ exitCode, signal }) => {
        clearTimeout(timer);
        this.running = false;
        this.exitCode = signal ? 128 + signal : exitCode;
        this.finishedAt = Date.now();
        // Let the last output chunks land before announcing the exit.
        setTimeout(() => {
          for (const l of this.listeners) l({ type: "exit" });
          this.listeners.clear();
          resolve();
        }, 20);
      });
    });
  }

  private push(raw: Buffer): void {
    const chunk = { seq: this.nextSeq++, data: raw.toString("base64"), timestamp: Date.now(), bytes: raw.length };
    this.chunks.push(chunk);
    this.bytes += raw.length;
    while (this.bytes > PTY_BUFFER_BYTES && this.chunks.length > 1) this.bytes -= this.chunks.shift()!.bytes;
    for (const l of this.listeners) l({ type: "output", chunk: strip(chunk) });
  }

  /** Buffered chunks after `cursor` (the last seq a client has seen; 0 = from the start). */
  since(cursor = 0): PtyChunk[] {
    return this.chunks.filter((c) => c.seq > cursor).map(strip);
  }

  subscribe(fn: (e: PtyEvent) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  write(data: Buffer): void {
    if (this.running) this.pty.write(data.toString("utf8"));
  }

  resize(rows: number, cols: number): void {
    if (!Number.isInteger(rows) || !Number.isInteger(cols) || rows < 1 || cols < 1 || rows > 1000 || cols > 1000) {
      throw badRequest("rows and cols must be integers between 1 and 1000");
    }
    this.rows = rows;
    this.cols = cols;
    if (this.running) this.pty.resize(cols, rows);
  }

  /** The PTY's process is a session leader: signal its whole group (nsenter, the shell and its foreground job). */
  signal(sig: NodeJS.Signals): void {
    if (this.running) signalGroup(this.pty.pid, sig);
  }

  get pid(): number {
    return this.pty.pid;
  }

  status(includeOutput: boolean) {
    return {
      id: this.id,
      command: this.command,
      args: this.args,
      cwd: this.cwd,
      pid: this.pty.pid,
      running: this.running,
      exitCode: this.exitCode,
      timedOut: this.timedOut,
      rows: this.rows,
      cols: this.cols,
      startedAt: this.startedAt,
      ...(this.finishedAt ? { finishedAt: this.finishedAt } : {}),
      ...(includeOutput ? { output: this.since(0) } : {}),
    };
  }
}

const strip = ({ seq, data, timestamp }: PtyChunk): PtyChunk => ({ seq, data, timestamp });

export class TerminalTable {
  private readonly ptys = new Map<string, Terminal>();

  constructor(private readonly jail: Jail) {}

  create(body: Record<string, unknown>): Terminal {
    if (typeof body.command !== "string" || !body.command) throw badRequest("command is required");
    const user = resolveUser(body.runAs);
    const args = Array.isArray(body.args) ? body.args.map(String) : [];
    const cwd = typeof body.cwd === "string" && body.cwd ? body.cwd : user === "root" ? "/root" : SANDBOX_HOME;
    const rows = typeof body.rows === "number" ? body.rows : 24;
    const cols = typeof body.cols === "number" ? body.cols : 80;
    const inner = body.useShell ? ["/bin/bash", "-lc", [body.command, ...args].join(" ")] : [body.command, ...args];
    const argv = [...this.jail.enterArgv(user, cwd), ...inner];
    const env = { ...sandboxEnv(user, body.env), TERM: "xterm-256color" };
    let pty: IPty;
    try {
      pty = spawnPty(argv[0], argv.slice(1), { name: "xterm-256color", rows, cols, cwd: "/", env });
    } catch (err) {
      throw new ApiError(500, "pty_failed", `could not start PTY: ${(err as Error).message}`);
    }
    const id = `pty_${randomBytes(9).toString("base64url")}`;
    const timeoutMs = typeof body.timeoutMs === "number" && body.timeoutMs > 0 ? body.timeoutMs : undefined;
    const t = new Terminal(id, body.command, args, cwd, pty, rows, cols, timeoutMs);
    this.jail.track(pty.pid);
    void t.done.then(() => this.jail.untrack(pty.pid));
    this.ptys.set(id, t);
    return t;
  }

  get(id: string): Terminal {
    const t = this.ptys.get(id);
    if (!t) throw notFound(`terminal ${id}`);
    return t;
  }

  killAll(): void {
    for (const t of this.ptys.values()) t.signal("SIGKILL");
  }

  static parseSignal(sig: unknown): NodeJS.Signals {
    return parseSignal(sig, "SIGHUP");
  }
}
