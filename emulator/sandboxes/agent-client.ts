// Host side of the in-sandbox agent: starts it inside a jail and speaks its line-then-bytes protocol over a unix socket.
import { spawn, type ChildProcess } from "node:child_process";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { ApiError, fsError } from "./errors.js";
import { SANDBOX_HOME } from "./images.js";
import { AGENT_IN_SANDBOX, type Jail, type SandboxUser } from "./jail.js";

interface AgentReply {
  ok: boolean;
  body?: any;
  status?: number;
  code?: string;
  errno?: string;
  message?: string;
}

function toError(reply: AgentReply, path: string): ApiError {
  if (reply.status) return new ApiError(reply.status, reply.code ?? "error", reply.message ?? "agent error");
  if (reply.errno) return fsError(Object.assign(new Error(reply.message), { code: reply.errno }), path);
  return new ApiError(500, "agent_error", reply.message ?? "agent error");
}

/** Reads the first JSON line of a socket; resolves with it and whatever bytes followed. */
function readReplyLine(sock: Socket): Promise<{ reply: AgentReply; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const nl = buf.indexOf(10);
      if (nl < 0) return;
      cleanup();
      sock.pause();
      try {
        resolve({ reply: JSON.parse(buf.subarray(0, nl).toString("utf8")), rest: buf.subarray(nl + 1) });
      } catch (e) {
        reject(e);
      }
    };
    const onEnd = () => (cleanup(), reject(new ApiError(502, "agent_unavailable", "sandbox agent closed the connection")));
    const onError = (e: Error) => (cleanup(), reject(new ApiError(502, "agent_unavailable", `sandbox agent unreachable: ${e.message}`)));
    const cleanup = () => {
      sock.off("data", onData);
      sock.off("end", onEnd);
      sock.off("error", onError);
    };
    sock.on("data", onData);
    sock.once("end", onEnd);
    sock.once("error", onError);
  });
}

export class SandboxAgent {
  private constructor(
    private readonly proc: ChildProcess,
    readonly socketPath: string,
  ) {}

  /** Starts the agent as `user` inside the jail and waits until its socket listens. */
  static async start(jail: Jail, user: SandboxUser, sockDir: string): Promise<SandboxAgent> {
    const file = `${user}/agent.sock`;
    const argv = [
      ...jail.enterArgv(user, user === "root" ? "/root" : SANDBOX_HOME),
      "/usr/bin/node",
      AGENT_IN_SANDBOX,
      `/run/tollgate/sock/${file}`,
    ];
    const proc = spawn(argv[0], argv.slice(1), {
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
      env: { HOME: user === "root" ? "/root" : SANDBOX_HOME, PATH: "/usr/local/bin:/usr/bin:/bin" },
    });
    jail.track(proc.pid);
    proc.once("exit", () => jail.untrack(proc.pid));
    let stderr = "";
    proc.stderr!.on("data", (d) => (stderr += d));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`sandbox agent did not start: ${stderr}`)), 15_000);
      proc.stdout!.on("data", (d: Buffer) => {
        if (d.toString().includes("ready")) clearTimeout(timer), resolve();
      });
      proc.once("exit", (code) => (clearTimeout(timer), reject(new Error(`sandbox agent exited with ${code}: ${stderr}`))));
    });
    return new SandboxAgent(proc, join(sockDir, file));
  }

  get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  private open(req: Record<string, unknown>): Socket {
    const sock = connect({ path: this.socketPath, allowHalfOpen: true });
    sock.write(JSON.stringify(req) + "\n");
    return sock;
  }

  /** One request, one JSON reply. */
  async call<T = any>(op: string, req: Record<string, unknown>): Promise<T> {
    const sock = this.open({ ...req, op });
    try {
      const { reply } = await readReplyLine(sock);
      if (!reply.ok)
        throw toError(reply, String(req.path ?? req.from ?? (req.files as Array<{ path?: string }> | undefined)?.[0]?.path ?? ""));
      return reply.body as T;
    } finally {
      sock.destroy();
    }
  }

  /** A raw byte pipe to 127.0.0.1:`port` inside the sandbox's network namespace, usable at once. */
  connectPort(port: number): Socket {
    return this.open({ op: "connect", port });
  }

  /** Streams `body` into `path` without buffering it. */
  async upload(path: string, body: Readable): Promise<{ path: string; bytesWritten: number }> {
    const sock = this.open({ op: "upload", path });
    const replied = readReplyLine(sock);
    body.on("error", () => sock.destroy());
    body.pipe(sock);
    try {
      const { reply } = await replied;
      if (!reply.ok) throw toError(reply, path);
      return reply.body;
    } finally {
      body.unpipe(sock);
      sock.destroy();
    }
  }

  /** Opens `path` for streaming; the socket (resumed by the consumer) then carries exactly the file's bytes. */
  async download(path: string): Promise<{ size: number; stream: Socket }> {
    const sock = this.open({ op: "download", path });
    sock.end();
    const { reply, rest } = await readReplyLine(sock);
    if (!reply.ok) {
      sock.destroy();
      throw toError(reply, path);
    }
    if (rest.length) sock.unshift(rest);
    return { size: reply.body.size, stream: sock };
  }

  /** Starts watching a directory; events arrive as parsed objects until close(). */
  async watch(
    path: string,
    recursive: boolean,
    onEvent: (e: { path: string; op: string; timestamp: number }) => void,
    onEnd: (error?: string) => void,
  ) {
    const sock = this.open({ op: "watch", path, recursive });
    const { reply, rest } = await readReplyLine(sock);
    if (!reply.ok) {
      sock.destroy();
      throw toError(reply, path);
    }
    let buf = rest.toString("utf8");
    const drain = () => {
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          const msg = JSON.parse(line);
          if (msg.ok === false) onEnd(msg.message);
          else onEvent(msg);
        } catch {
          /* ignore a torn line */
        }
      }
    };
    drain();
    sock.on("data", (d: Buffer) => ((buf += d.toString("utf8")), drain()));
    sock.on("close", () => onEnd());
    sock.on("error", () => {});
    sock.resume();
    // The directory as watched: its real path (a symlinked directory is followed), as events name its files.
    const watched = typeof reply.body?.path === "string" ? (reply.body.path as string) : path;
    return { path: watched, close: () => sock.destroy() };
  }

  stop(): void {
    this.proc.stdin?.end();
    if (this.proc.pid) {
      try {
        process.kill(-this.proc.pid, "SIGKILL");
      } catch {
        /* already gone */
      }
    }
  }
}
