// @hono/node-server's Response (the global one once `serve` runs) keeps the status, body and headers it was made with
// and, unless its headers are read, writes them as they are: no `Headers` is built. A header the chain adds after the
// handler (x-request-id, the rate limit's: setResponseHeader) would build one, converting every header of the answer
// (~10 µs for a cached search answer). This writes it into that unread record instead (a copy: the record may be
// shared by many answers). It reads the adapter's private state, so it checks itself when made and is left out
// (headers set as usual) when the adapter keeps it otherwise.
const DEFAULT_CONTENT_TYPE = "text/plain; charset=UTF-8";

type UnreadHeaderWriter = (res: Response, name: string, value: string) => boolean;

/** The symbol node-server's Response keeps its unread status, body and headers under (undefined elsewhere). */
const cacheKeyOf = () =>
  Object.getOwnPropertySymbols(new Response("x", { headers: { "x-probe": "1" } })).find((s) => s.description === "cache");

/**
 * For this process's Response: whether an answer was made with no headers and nobody has read or set any since (so it
 * has none), without building its `Headers`; undefined when the Response is not node-server's or keeps it otherwise.
 */
export function headerlessCheck(): ((res: Response) => boolean) | undefined {
  const key = cacheKeyOf();
  if (!key) return undefined;
  const headerless = (res: Response) => {
    const cache = (res as unknown as Record<symbol, unknown>)[key];
    return Array.isArray(cache) && cache[1] === null && (cache[2] === undefined || cache[2] === null);
  };
  const read = new Response(null, { status: 200 });
  void read.headers;
  const set = new Response(null, { status: 200 });
  set.headers.set("x-probe", "1");
  if (
    !headerless(new Response(null, { status: 200 })) ||
    headerless(read) ||
    headerless(set) ||
    headerless(new Response(null, { headers: { a: "1" } }))
  )
    return undefined;
  return headerless;
}

/** The writer for this process's Response, or undefined when it is not a node-server Response that keeps its record. */
export function unreadHeaderWriter(): UnreadHeaderWriter | undefined {
  const key = cacheKeyOf();
  if (!key) return undefined;
  const write: UnreadHeaderWriter = (res, name, value) => {
    const cache = (res as unknown as Record<symbol, unknown>)[key];
    if (!Array.isArray(cache)) return false; // read already: it is a full Response now
    const had = cache[2] as unknown;
    let next: Record<string, string>;
    if (had === undefined || had === null) {
      // What the adapter would write for a body without headers.
      next = cache[1] === null ? {} : { "content-type": DEFAULT_CONTENT_TYPE };
    } else if (typeof had === "object" && !(had instanceof Headers) && !Array.isArray(had)) {
      // Already there as it would be written (a handler that named the request's id itself): nothing to copy.
      if ((had as Record<string, string>)[name] === value) return true;
      next = {};
      for (const k in had as Record<string, string>) if (k.toLowerCase() !== name) next[k] = (had as Record<string, string>)[k]!;
    } else return false;
    next[name] = value;
    cache[2] = next;
    return true;
  };
  // What is written this way is what the Response then says it has (and the record it was made with is left alone).
  const given = { "Content-Type": "application/json", "X-Request-Id": "old" };
  const probe = new Response("{}", { status: 201, headers: given });
  const bare = new Response("x");
  if (
    !write(probe, "x-request-id", "new") ||
    !write(bare, "x-added", "1") ||
    probe.headers.get("x-request-id") !== "new" ||
    probe.headers.get("content-type") !== "application/json" ||
    given["X-Request-Id"] !== "old" ||
    bare.headers.get("content-type") !== DEFAULT_CONTENT_TYPE ||
    bare.headers.get("x-added") !== "1"
  )
    return undefined;
  return write;
}
