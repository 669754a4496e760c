// Directory watches inside a sandbox: events with sequence numbers, kept for cursor replay over the watch WebSocket.
import { randomBytes } from "node:crypto";
import { notFound } from "./errors.js";
import type { SandboxAgent } from "./agent-client.js";

export interface WatchEvent {
  seq: number;
  path: string;
  op: string;
  timestamp: number;
}
export type WatchSignal = { type: "event"; event: WatchEvent } | { type: "done" };

const KEEP_EVENTS = 10_000;

export class DirWatch {
  active = true;
  error?: string;
  stoppedAt?: number;
  readonly createdAt = Date.now();
  private events: WatchEvent[] = [];
  private nextSeq = 1;
  private readonly listeners = new Set<(s: WatchSignal) => void>();
  close: () => void = () => {};

  constructor(
    readonly id: string,
    readonly path: string,
    readonly recursive: boolean,
  ) {}

  push(e: { path: string; op: string; timestamp: number }): void {
    const event = { seq: this.nextSeq++, ...e };
    this.events.push(event);
    if (this.events.length > KEEP_EVENTS) this.events.shift();
    for (const l of this.listeners) l({ type: "event", event });
  }

  end(error?: string): void {
    if (!this.active) return;
    this.active = false;
    this.error = error;
    this.stoppedAt = Date.now();
    this.close();
    for (const l of this.listeners) l({ type: "done" });
    this.listeners.clear();
  }

  /** Events after `cursor` (the last seq a client saw), or null when they fell out of the buffer. */
  since(cursor = 0): WatchEvent[] | null {
    const oldest = this.events[0]?.seq ?? this.nextSeq;
    if (cursor + 1 < oldest && oldest > 1) return null;
    return this.events.filter((e) => e.seq > cursor);
  }

  subscribe(fn: (s: WatchSignal) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  wire() {
    return {
      id: this.id,
      path: this.path,
      recursive: this.recursive,
      active: this.active,
      createdAt: this.createdAt,
      ...(this.error ? { error: this.error } : {}),
      ...(this.stoppedAt ? { stoppedAt: this.stoppedAt } : {}),
      oldestSeq: this.events[0]?.seq ?? 0,
      lastSeq: this.nextSeq - 1,
      eventCount: this.nextSeq - 1,
    };
  }
}

export class WatchTable {
  private readonly watches = new Map<string, DirWatch>();

  async start(agent: SandboxAgent, path: string, recursive: boolean): Promise<DirWatch> {
    const id = `watch_${randomBytes(9).toString("base64url")}`;
    let watch: DirWatch | undefined;
    const pending: Array<{ path: string; op: string; timestamp: number }> = [];
    const handle = await agent.watch(
      path,
      recursive,
      (e) => (watch ? watch.push(e) : pending.push(e)),
      (err) => watch?.end(err),
    );
    watch = new DirWatch(id, handle.path, recursive);
    watch.close = handle.close;
    for (const e of pending) watch.push(e);
    this.watches.set(id, watch);
    return watch;
  }

  get(id: string): DirWatch {
    const w = this.watches.get(id);
    if (!w) throw notFound(`watch ${id}`);
    return w;
  }

  stopAll(): void {
    for (const w of this.watches.values()) w.end();
  }
}
