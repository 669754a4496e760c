// The undici Agent behind the Node transport: one keep-alive Pool per upstream origin, whose connections stay usable
// after a request undici refuses outright.
import { Agent, Client, type Dispatcher, Pool } from "undici";

/**
 * A connection that undici's Pool does not lose to a refused request. Undici refuses some requests while dispatching
 * them (an `expect` header, for one: NotSupportedError): the request fails at once, yet dispatch() answers `false`,
 * which the Pool reads as "busy until 'drain'". No 'drain' ever comes from a connection that was never busy, so the
 * Pool never uses it again; once every one of its `connections` is lost so, each later request waits in the Pool's
 * queue for good, where neither undici's headers timeout nor the request's signal reaches it. This client emits the
 * 'drain' the Pool waits for after such a refusal (a spare 'drain' from a busy client only hands it queued requests
 * it takes in turn).
 */
/**
 * Client's own count of its queued and running requests (the `size` its public `stats` reports), read without the
 * ClientStats object `stats` builds on each read (two per dispatch here): the accessor undici keys by its `size`
 * symbol, looked up once; `stats` where a later undici has none.
 */
const SIZE = Object.getOwnPropertySymbols(Client.prototype).find((s) => s.description === "size");
const sizeOf: (c: Client) => number = SIZE ? (c) => (c as unknown as Record<symbol, number>)[SIZE]! : (c) => c.stats.size;

class RefusalSafeClient extends Client {
  private readonly origin: URL;

  constructor(origin: URL, opts: Client.Options) {
    super(origin, opts);
    this.origin = origin;
  }

  /**
   * A refused request is never queued: the client's queue is no longer after dispatch() than before (an accepted one is
   * in it, waiting or running, since no answer can come back during the call). Read from the public stats, so the
   * handler is left as it is: wrapping its onError for each request (as this did before) kept every relayed
   * request's objects reachable through V8's scavenges, which promoted them all to the old generation.
   */
  override dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const queued = sizeOf(this);
    const accepted = super.dispatch(opts, handler);
    // The Pool marks this client busy after dispatch() returns: the 'drain' has to come after that.
    if (!accepted && sizeOf(this) === queued) {
      // Undici's own clients emit it with their targets, which the Pool passes on (its types name the origin alone).
      const emit = this.emit.bind(this) as (event: "drain", origin: URL, targets: Dispatcher[]) => boolean;
      queueMicrotask(() => emit("drain", this.origin, [this]));
    }
    return accepted;
  }
}

/** A keep-alive Agent of at most `connections` connections per origin, whose pools survive refused requests. */
export function upstreamAgent(connections: number): Agent {
  return new Agent({
    connections,
    keepAliveTimeout: 30_000,
    // The transport times the wait for headers itself (see undici-transport.ts); response bodies may stream for long.
    headersTimeout: 0,
    bodyTimeout: 0,
    factory: (origin, opts) =>
      new Pool(origin, { ...(opts as Pool.Options), factory: (o, clientOpts) => new RefusalSafeClient(o, clientOpts as Client.Options) }),
  });
}
