// One relayed exchange with the upstream, as undici's dispatcher calls it back: the answer's head, then its body held
// or written to the client's socket (src/host/node/direct-relay.ts, whose relay makes one per call).
import type { ServerResponse } from "node:http";
import { Client, type Dispatcher } from "undici";
import { UpstreamHeadersTimeout } from "../../web/transport.js";

/** Body bytes held while the chain finishes before the upstream connection is paused. */
const HELD_BYTES = 64 * 1024;
/** An upstream socket closed under a request (a kept-alive one the upstream had just closed, most often). */
const RESET = new Set(["ECONNRESET", "UND_ERR_SOCKET"]);

/**
 * One relayed exchange, as undici's dispatcher calls it back (its handler interface: no IncomingMessage, no pipe). The
 * answer's head settles `head`; body chunks that come before the chain has finished are held (past HELD_BYTES the
 * upstream connection is paused) and written once the server has written the head (`attach`); later ones go straight
 * to the client's socket, the upstream paused while that is full. The client going away ends the exchange, whether it
 * was still waiting for the head or the body was being written.
 */
export class Exchange implements Dispatcher.DispatchHandler {
  status = 0;
  rawHeaders: Buffer[] = [];
  private complete = false;
  private abortUpstream?: (err?: Error) => void;
  private resumeUpstream?: () => void;
  private out?: ServerResponse;
  private held?: Buffer[];
  private heldBytes = 0;
  private paused = false;
  private dropped = false;
  private failed = false;
  private started = false;
  private readonly timer?: NodeJS.Timeout;
  private resolve!: (e: Exchange) => void;
  private reject!: (err: unknown) => void;
  readonly head: Promise<Exchange>;

  constructor(
    dispatcher: Dispatcher,
    private readonly opts: Dispatcher.DispatchOptions,
    private readonly client: ServerResponse,
    headersTimeoutMs: number | undefined,
    /** May be sent once more on a reset before its head (idempotent, body in hand). */
    private retry: boolean,
  ) {
    this.head = new Promise<Exchange>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    if (headersTimeoutMs !== undefined && headersTimeoutMs > 0)
      this.timer = setTimeout(() => this.fail(new UpstreamHeadersTimeout()), headersTimeoutMs);
    client.on("close", this.clientClosed);
    dispatcher.dispatch(opts, this);
  }

  private readonly clientClosed = () => {
    if (!this.complete) this.fail(new Error("client went away"));
  };

  /**
   * The exchange is over: the client's response lets go of it. (Left on it, the listener kept each relayed request's
   * objects reachable through V8's young-generation collections, which then promoted them all to the old generation.)
   */
  private done() {
    this.complete = true;
    this.client.removeListener("close", this.clientClosed);
  }

  /** Ends the exchange: rejects a head not come yet, aborts the upstream request, cuts a client's answer begun. */
  private fail(err: Error) {
    if (this.timer) clearTimeout(this.timer);
    this.failed = true;
    this.done();
    if (!this.started) this.reject(err);
    this.abortUpstream?.(err);
    if (this.out && !this.out.destroyed) this.out.destroy();
  }

  onConnect(abort: (err?: Error) => void) {
    this.abortUpstream = abort;
    if (this.failed) abort(new Error("relay ended"));
  }

  onHeaders(status: number, rawHeaders: Buffer[], resume: () => void) {
    if (status < 200) return true; // informational: the final answer follows
    if (this.timer) clearTimeout(this.timer);
    this.status = status;
    this.rawHeaders = rawHeaders;
    this.resumeUpstream = resume;
    this.started = true;
    this.resolve(this);
    return true;
  }

  onData(chunk: Buffer) {
    if (this.dropped) return true;
    const out = this.out;
    if (out) {
      if (out.write(chunk)) return true;
      this.pauseFor(out);
      return false;
    }
    (this.held ??= []).push(chunk);
    this.heldBytes += chunk.byteLength;
    if (this.heldBytes < HELD_BYTES) return true;
    this.paused = true;
    return false;
  }

  onComplete() {
    this.done();
    this.out?.end();
  }

  onError(err: Error) {
    if (this.failed) return;
    // A kept-alive socket the upstream closed just as it was reused: sent once more, on a connection of its own (the
    // pool's other idle ones may have been closed alike); that client closes once the exchange is over.
    if (this.retry && !this.started && RESET.has((err as { code?: string }).code ?? "") && !this.client.destroyed) {
      this.retry = false;
      this.abortUpstream = undefined;
      const fresh = new Client(this.opts.origin!);
      fresh.dispatch(this.opts, this);
      fresh.close().catch(() => {});
      return;
    }
    this.fail(err);
  }

  private pauseFor(out: ServerResponse) {
    this.paused = true;
    out.once("drain", () => {
      this.paused = false;
      this.resumeUpstream?.();
    });
  }

  /** Writes the held body, and the rest as it comes, to the client whose head the server has just written. */
  attach(out: ServerResponse) {
    if (this.failed) {
      out.destroy();
      return;
    }
    this.out = out;
    const held = this.held;
    this.held = undefined;
    if (this.complete) {
      if (!held) out.end();
      else out.end(held.length === 1 ? held[0] : Buffer.concat(held));
      return;
    }
    let full = false;
    if (held) for (const chunk of held) full = !out.write(chunk);
    if (this.paused) {
      this.paused = false;
      if (full) this.pauseFor(out);
      else this.resumeUpstream?.();
    }
  }

  /** Reads an answer that will not be sent to its end, so the connection goes back to the pool. */
  discard() {
    this.dropped = true;
    this.held = undefined;
    if (this.paused) {
      this.paused = false;
      this.resumeUpstream?.();
    }
  }

  /** Ends an answer that will not be sent (the chain replaced it, or another relay took its place). */
  destroy() {
    if (!this.complete) this.fail(new Error("relayed answer dropped"));
  }
}
