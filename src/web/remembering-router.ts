// Hono's TrieRouter, with the match of each recent (method, path) remembered. Hono's RegExpRouter, which matches in a
// fraction of TrieRouter's time, refuses the route table (a literal beside a parameter at the same place, as in
// `/api/scrape/batch/:id` beside `/api/scrape/:id`), so every request used to walk the trie: 2–4 µs on the runtime
// plane's long paths (`/sandbox/:id/processes/:pid/wait`). Clients repeat their paths (a sandbox's process polled, a
// job's status, the one search path), so a bounded table of recent answers saves that walk on most requests.
import type { Result, Router } from "hono/router";
import { TrieRouter } from "hono/router/trie-router";

/** Paths longer than this are matched each time and never kept: the table's memory stays bounded. */
const MAX_PATH = 256;

export class RememberingRouter<T> implements Router<T> {
  readonly name = "RememberingRouter(TrieRouter)";
  readonly #trie = new TrieRouter<T>();
  /** `${method} ${path}` → the trie's answer, oldest first; Hono only reads an answer (handlers and their params). */
  readonly #recent = new Map<string, Result<T>>();

  constructor(private readonly capacity = 2048) {}

  add(method: string, path: string, handler: T): void {
    this.#trie.add(method, path, handler);
    this.#recent.clear();
  }

  match(method: string, path: string): Result<T> {
    if (path.length > MAX_PATH) return this.#trie.match(method, path);
    const key = `${method} ${path}`;
    const known = this.#recent.get(key);
    if (known) return known;
    const result = this.#trie.match(method, path);
    if (this.#recent.size >= this.capacity) this.#recent.delete(this.#recent.keys().next().value as string);
    this.#recent.set(key, result);
    return result;
  }

  /** How many answers are kept (tests). */
  get size(): number {
    return this.#recent.size;
  }
}
