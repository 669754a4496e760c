// The emulator's own Chrome DevTools Protocol client: puppeteer-core's Connection over its Node WebSocket transport, with
// every flattened target session's events re-emitted on one stream (CdpEvent, tagged with its sessionId).
import { EventEmitter } from "node:events";
import { type CDPSession, CDPSessionEvent } from "puppeteer-core/internal/api/CDPSession.js";
import { Connection } from "puppeteer-core/internal/cdp/Connection.js";
import { NodeWebSocketTransport } from "puppeteer-core/internal/node/NodeWebSocketTransport.js";

export interface CdpEvent {
  method: string;
  params: any;
  sessionId?: string;
}

/** mitt's wildcard listener, which puppeteer's emitters pass through: every event, by its type. */
type AnyEvent = (type: unknown, params: unknown) => void;
type Wildcard = { on(type: "*", handler: AnyEvent): unknown };

export class CdpConnection extends EventEmitter {
  private closed = false;

  private constructor(private readonly connection: Connection) {
    super();
    const forward =
      (sessionId?: string): AnyEvent =>
      (type, params) => {
        if (typeof type === "string") this.emit("event", { method: type, params: params ?? {}, sessionId } satisfies CdpEvent);
      };
    (connection as unknown as Wildcard).on("*", forward());
    connection.on(CDPSessionEvent.SessionAttached, (session: CDPSession) =>
      (session as unknown as Wildcard).on("*", forward(session.id())),
    );
    connection.on(CDPSessionEvent.Disconnected, () => this.onClose());
  }

  static async open(url: string, timeoutMs = 10_000): Promise<CdpConnection> {
    const transport = await Promise.race([
      NodeWebSocketTransport.create(url),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`CDP connection to ${url} timed out`)), timeoutMs).unref()),
    ]);
    return new CdpConnection(new Connection(url, transport, 0, 30_000));
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  send<T = any>(method: string, params: Record<string, unknown> = {}, sessionId?: string, timeoutMs = 30_000): Promise<T> {
    if (this.closed) return Promise.reject(new Error(`CDP connection closed (${method})`));
    const target = sessionId ? this.connection.session(sessionId) : this.connection;
    if (!target) return Promise.reject(new Error(`CDP ${method}: no session ${sessionId}`));
    return (target.send(method as never, params as never, { timeout: timeoutMs }) as Promise<T>).catch((err: Error) => {
      throw new Error(`CDP ${method}: ${err.message}`);
    });
  }

  close(): void {
    if (!this.closed) this.connection.dispose();
    this.onClose();
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.emit("close");
  }
}
