// Shared types and body parsing for the runtime-plane routes (`/sandbox/<id>/...`).
import type { Context } from "hono";
import type { HttpBindings } from "@hono/node-server";
import { badRequest } from "./errors.js";
import type { Sandbox } from "./sandbox.js";

export type RuntimeEnv = { Bindings: HttpBindings; Variables: { sandbox: Sandbox } };
export type RuntimeContext = Context<RuntimeEnv>;

export async function body(c: Context): Promise<Record<string, any>> {
  const text = await c.req.text();
  if (!text.trim()) return {};
  try {
    const v = JSON.parse(text);
    if (v && typeof v === "object" && !Array.isArray(v)) return v;
  } catch {
    /* fall through */
  }
  throw badRequest("Request body must be a JSON object");
}

/** A simple async FIFO: producers push synchronously, one consumer awaits. */
export class Queue<T> {
  private items: T[] = [];
  private waiter?: () => void;
  closed = false;
  push(item: T): void {
    this.items.push(item);
    this.waiter?.();
  }
  close(): void {
    this.closed = true;
    this.waiter?.();
  }
  async next(): Promise<T | undefined> {
    while (!this.items.length && !this.closed) await new Promise<void>((r) => (this.waiter = r));
    this.waiter = undefined;
    return this.items.shift();
  }
}
