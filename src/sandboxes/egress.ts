// The secrets' egress, `$TOLLGATE_EGRESS/NAME/<path>` (docs/secrets-for-agents.md): a request from a sandbox carrying
// the placeholder of secret NAME goes to the secret's host with the placeholder replaced by the value, written into the
// secret's header in its format. Refused (and nothing sent) for a placeholder the gateway did not hand out, of another
// secret, of a sandbox that ended, of a disabled tenant or a deleted secret; for a host, method or path the secret does
// not allow. A sandbox that ended without the gateway seeing it (its own timeout, stopped or deleted outside the
// gateway) is found out here: the egress asks the upstream for the sandbox's status, an answer "running" reused for
// STATUS_FRESH_MS, and an ended or unknown one marks it ended (its placeholders refused from then on, everywhere). The
// destination is reached through the destination guard (https only; plain http to loopback only with
// egress.allowHttpLoopback; never a private, link-local or metadata address; no redirect followed), and its answer
// streams back as it comes (SSE passes). Rate-limited per tenant (egress.requestsPerMinute); in the request log under
// the tenant (the path only: the value is never in a request line, the placeholder only in a header).
import { LRUCache } from "lru-cache";
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import type { Handlers } from "../routing/handlers.js";
import { SECRET_NAME } from "../routing/admin-schemas.js";
import { splitRequestUrl } from "../web/request-url.js";
import { DestinationUnreachable } from "../web/destination-guard.js";
import { sandboxLive } from "./secret-env.js";
import { upstreamJson } from "../upstream/upstream.js";
import { SANDBOX_ENDED, SandboxDetail } from "./wire.js";

const PLACEHOLDER = /tg_sec_[A-Za-z0-9_-]{32}/;
const PREFIX = "/_tollgate/egress/";
/** Which of the secret's hosts a request goes to (default: the first). */
const HOST_HEADER = "x-tollgate-host";
const HOP_BY_HOP = [
  "connection",
  "keep-alive",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "proxy-authorization",
  "proxy-connection",
  "host",
];
const LOOPBACK = /^(127(?:\.\d{1,3}){3}|localhost|\[::1\])(?::\d+)?$/;

const refused = (code: string, message: string, status = 403) => new GatewayError(status, code, message);

/** How long the upstream's answer that a sandbox runs is reused by the egress (per instance): an ended one is refused within it. */
const STATUS_FRESH_MS = 2_000;

export function egressHandlers(services: GatewayServices): Handlers {
  /** Sandboxes the upstream said run, for STATUS_FRESH_MS; concurrent reads of one sandbox share one upstream call. */
  // ttlResolution 0: lru-cache's default caches "now" until a 1 ms timer clears it, and on Workers a timer set in a
  // request that ended never runs, so entries would never age (found by test/foundation/secrets-worker-dev.test.ts).
  const running = new LRUCache<string, true>({ max: 10_000, ttl: STATUS_FRESH_MS, ttlResolution: 0, perf: { now: () => services.now() } });
  const reading = new Map<string, Promise<boolean>>();

  /** Whether the upstream still runs the sandbox; an ended (or unknown) one is marked ended for the whole fleet. */
  const upstreamRuns = (c: Context<GatewayEnv>, id: string): Promise<boolean> => {
    if (running.has(id)) return Promise.resolve(true);
    let p = reading.get(id);
    if (!p) {
      p = (async () => {
        const res = await services.upstream.call(c, {
          method: "GET",
          path: `/api/sandbox/${encodeURIComponent(id)}`,
          detachFromClient: true,
        });
        if (res.status !== 404 && !res.ok) {
          await res.body?.cancel();
          throw new GatewayError(
            502,
            "egress_unreachable",
            "The gateway could not check the sandbox's status with the upstream; try again shortly.",
          );
        }
        const status = res.status === 404 ? (await res.body?.cancel(), "deleted") : ((await upstreamJson(res, SandboxDetail)).status ?? "");
        if (res.status === 404 || SANDBOX_ENDED.has(status)) {
          services.logger.info("egress sandbox ended", { sandbox: id, status });
          await services.stores.ownership.setActive("sandbox", id, false);
          await services.custody.forget(id);
          return false;
        }
        running.set(id, true);
        return true;
      })().finally(() => reading.delete(id));
      reading.set(id, p);
    }
    return p;
  };

  return {
    egress: async (c) => {
      const { path, query } = splitRequestUrl(c.req.url);
      const after = path.slice(PREFIX.length);
      const slash = after.indexOf("/");
      const name = slash < 0 ? after : after.slice(0, slash);
      const rest = slash < 0 ? "/" : after.slice(slash);
      if (!SECRET_NAME.test(name)) throw refused("not_found", `No secret ${name} here: the egress is $TOLLGATE_EGRESS/NAME/<path>.`, 404);
      const headers = c.req.raw.headers;
      let placeholder: string | undefined;
      for (const [, v] of headers) placeholder ??= PLACEHOLDER.exec(v)?.[0];
      if (!placeholder)
        throw refused(
          "egress_placeholder_missing",
          `Send the placeholder $${name} in the header the secret names (e.g. "Authorization: Bearer $${name}").`,
          401,
        );
      const binding = await services.vault.resolve(placeholder);
      if (!binding || binding.name !== name)
        throw refused("egress_refused", `This placeholder is not one of ${name}'s: use $${name} from the sandbox's environment.`);
      const tenant = services.directory.get(binding.tenant);
      const fields = c.get("logFields");
      if (fields) fields.tenant = binding.tenant;
      if (!tenant?.enabled) throw refused("tenant_disabled", "The tenant this placeholder belongs to is disabled.", 401);
      if (!(await sandboxLive(services, binding.tenant, binding.sandboxId)) || !(await upstreamRuns(c, binding.sandboxId)))
        throw refused("egress_sandbox_ended", `The sandbox this placeholder was handed to has ended: its placeholders are refused.`);
      const limit = services.config.egress.requestsPerMinute;
      const hit = await services.stores.rateLimiter.hit(`egress:${binding.tenant}`, limit, 60_000, services.now());
      if (!hit.allowed)
        throw new GatewayError(
          429,
          "rate_limited",
          `At most ${limit} requests a minute through the egress (egress.requestsPerMinute).`,
          { limit },
          {
            "retry-after": String(Math.max(1, Math.ceil((hit.resetAt - services.now()) / 1000))),
          },
        );
      const use = await services.vault.valueFor(binding.tenant, name);
      if (!use) throw refused("egress_refused", `The secret ${name} was deleted.`);
      const host = (headers.get(HOST_HEADER) ?? use.hosts[0]!).trim().toLowerCase();
      if (!use.hosts.includes(host))
        throw refused("egress_host_refused", `${name} may be sent to ${use.hosts.join(", ")} only, not ${host}.`);
      const method = c.req.method;
      if (use.methods && !use.methods.includes(method))
        throw refused("egress_method_refused", `${name} may be sent with ${use.methods.join(", ")} only, not ${method}.`);
      if (use.paths && !use.paths.some((p) => rest.startsWith(p)))
        throw refused("egress_path_refused", `${name} may be sent to paths under ${use.paths.join(", ")} only.`);

      const loopback = LOOPBACK.test(host) && services.config.egress.allowHttpLoopback;
      const out = new Headers();
      for (const [k, v] of headers) if (!HOP_BY_HOP.includes(k) && k !== HOST_HEADER && !PLACEHOLDER.test(v)) out.set(k, v);
      out.set(use.header, use.format.replace("{}", use.value));
      const bodiless = method === "GET" || method === "HEAD";
      let res: Response;
      try {
        res = await services.destinations.stream({
          url: `${loopback ? "http" : "https"}://${host}${rest}${query}`,
          method,
          headers: out,
          body: bodiless ? null : c.req.raw.body,
          headersTimeoutMs: services.config.egress.timeoutMs,
          policy: { allowHttp: loopback, allowCidrs: loopback ? ["127.0.0.0/8", "::1/128"] : [] },
          signal: c.req.raw.signal,
        });
      } catch (err) {
        if (!(err instanceof DestinationUnreachable)) throw err;
        services.logger.info("egress unreachable", {
          requestId: c.get("requestId"),
          tenant: binding.tenant,
          name,
          host,
          reason: err.reason,
        });
        throw new GatewayError(502, "egress_unreachable", err.message);
      }
      services.background(c, services.vault.noteUse(binding.tenant, name), "secret last use");
      const back = new Headers(res.headers);
      for (const h of HOP_BY_HOP) back.delete(h);
      return new Response(res.body, { status: res.status, headers: back });
    },
  };
}
