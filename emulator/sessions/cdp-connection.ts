// A minimal Chrome DevTools Protocol client over one `ws` socket, with flattened target sessions.
import { EventEmitter } from "node:events";
import WebSocket from "ws";

interface Pending {
  resolve(result: any): void;
  reject(err: Error): void;
  method: string;
}

export interface CdpEvent {
  method: string;
  params: any;
  sessionId?: string;
}

export class CdpConnection extends EventEmitter {
  private nextId = 0;
  private readonly pending = new Map<number, Pending>();
  private closed = false;

  private constructor(private readonly socket: WebSocket) {
    super();
    socket.on("message", (data) => this.onMessage(data.toString()));
    socket.on("close", () => this.onClose());
    socket.on("error", () => this.onClose());
  }

  static open(url: string, timeoutMs = 10_000): Promise<CdpConnection> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url, { perMessageDeflate: false, maxPayload: 256 * 1024 * 1024, handshakeTimeout: timeoutMs });
      socket.once("open", () => resolve(new CdpConnection(socket)));
      socket.once("error", reject);
    });
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  send<T = any>(method: string, params: Record<string, unknown> = {}, sessionId?: string, timeoutMs = 30_000): Promise<T> {
    if (this.closed) return Promise.reject(new Error(`CDP connection closed (${method})`));
    const id = ++this.nextId;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`CDP ${method} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, {
        method,
        resolve: (r) => (clearTimeout(timer), resolve(r)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      this.socket.send(JSON.stringify(sessionId ? { id, method, params, sessionId } : { id, method, params }));
    });
  }

  close(): void {
    if (!this.closed) this.socket.close();
    this.onClose();
  }

  private onMessage(text: string): void {
    let msg: any;
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof msg.id === "number") {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new Error(`CDP ${p.method}: ${msg.error.message ?? "error"}`));
      else p.resolve(msg.result ?? {});
      return;
    }
    if (typeof msg.method === "string") this.emit("event", { method: msg.method, params: msg.params ?? {}, sessionId: msg.sessionId } satisfies CdpEvent);
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    for (const p of this.pending.values()) p.reject(new Error(`CDP connection closed (${p.method})`));
    this.pending.clear();
    this.emit("close");
  }
}
