// Sandbox control plane (/api/sandbox*, /api/sandboxes, /api/snapshots): the route table's rows for them. Ownership and
// scope are the chain's; these handlers claim what is created and replace every runtime/port URL and runtime token in
// an answer with the gateway's own.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError, jsonResponse } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { Upstream, pathAndQuery, upstreamJson } from "../upstream/upstream.js";
import { SANDBOX_ENDED, SandboxDetail, SnapshotAnswer } from "./wire.js";
import { readWire } from "../upstream/records.js";
import { rewriteExposure, rewriteSandboxDetail } from "./rewrite.js";
import { sandboxCustody } from "./custody.js";
import { ownedPage } from "./owned-list.js";
import { rememberPublicHost } from "./port-hosts.js";
import { claimSnapshot, pinSnapshotSource, resolveOwnedSnapshot } from "./snapshots.js";
import { tenantRewriteContext } from "./tenant-view.js";
import { callerTenant } from "../identity/caller.js";
import { jsonBody } from "../routing/json-body.js";
import { settleResource } from "../payments/index.js";
import type { Handlers } from "../routing/handlers.js";
import { claimCreated, noteCreated } from "../routing/created.js";
import { withEgressFloor } from "./secret-env.js";

const JSON_HEADERS = () => new Headers({ "content-type": "application/json" });

/** Answers with the upstream's status and a JSON body (rewritten by the caller), keeping x-request-id. */
function answer(res: Response, body: unknown): Response {
  const headers: Record<string, string> = {};
  const rid = res.headers.get("x-request-id");
  if (rid) headers["x-request-id"] = rid;
  return jsonResponse(res.status, body, headers);
}

export function sandboxHandlers(services: GatewayServices): Handlers {
  const { upstream } = services;
  const custody = sandboxCustody(services);

  /** Rewrites one upstream sandbox for the tenant, keeping the upstream runtime credential server-side. */
  const present = async (c: Context<GatewayEnv>, record: object) => {
    const detail = readWire(SandboxDetail, record);
    const ctx = tenantRewriteContext(c, services, callerTenant(c));
    await rememberPublicHost(services, String(detail.id), ctx.publicOrigin);
    if ("token" in detail && detail.token) await custody.keep(detail, { reuse: true });
    if (SANDBOX_ENDED.has(detail.status ?? "")) {
      await services.stores.ownership.setActive("sandbox", String(detail.id), false);
      await settleResource(services, "sandbox", String(detail.id), c);
    }
    return rewriteSandboxDetail(detail, ctx);
  };

  const forwardJson = (c: Context<GatewayEnv>, body: string) =>
    upstream.call(c, { method: c.req.method, path: pathAndQuery(c), headers: JSON_HEADERS(), body });

  return {
    "sandbox.create": async (c, row) => {
      const tenant = callerTenant(c);
      const body = { ...(await jsonBody(c, services.platform)).json };
      await pinSnapshotSource(services, tenant, body);
      const sent = await withEgressFloor(services, tenant.id, body);
      const res = await upstream.call(c, { method: "POST", path: "/api/sandbox", headers: JSON_HEADERS(), body: JSON.stringify(sent) });
      if (!res.ok) return Upstream.relay(res);
      const detail = await upstreamJson(res, SandboxDetail);
      if (!detail.id) throw new GatewayError(502, "upstream_bad_response", "The upstream created a sandbox but did not say its id.");
      const id = String(detail.id);
      // What it was made from, for the secrets limited to images or snapshots (docs/secrets-for-agents.md): written
      // beside the claim; awaited only when the tenant has a secret limited so (otherwise it finishes behind the answer).
      const source = {
        ...(typeof body.imageName === "string" ? { image: body.imageName } : {}),
        ...(typeof body.snapshotName === "string" ? { snapshot: body.snapshotName } : {}),
      };
      const noting = services.vault.noteSource(tenant.id, id, source);
      // Should the claim refuse, the write behind the answer is still let finish without an unhandled rejection.
      void noting.then(
        (n) => n.pending?.catch(() => {}),
        () => {},
      );
      let shown: Awaited<ReturnType<typeof rewriteSandboxDetail>>;
      if (SANDBOX_ENDED.has(detail.status ?? "")) {
        await Promise.all([claimCreated(services, c, { kind: "sandbox", id, tenant: tenant.id, route: row.name }), noting]);
        shown = await present(c, detail);
      } else {
        // The public host and the runtime credential are written beside the claim: one state round trip for the
        // creation. Neither hands anything over: the port router and the runtime plane serve only the owner's tokens,
        // and a credential kept for an id the claim refuses is the upstream's own for that sandbox (it lapses).
        const ctx = tenantRewriteContext(c, services, tenant);
        await Promise.all([
          claimCreated(services, c, { kind: "sandbox", id, tenant: tenant.id, route: row.name }),
          rememberPublicHost(services, id, ctx.publicOrigin),
          "token" in detail && detail.token ? custody.keep(detail, { reuse: true }) : undefined,
          noting,
        ]);
        shown = await rewriteSandboxDetail(detail, ctx);
      }
      const noted = await noting;
      if (noted.pending) services.background(c, noted.pending, "sandbox source");
      // The chain's quota and meter steps take the created id from here, not from the answer again.
      noteCreated(c, shown);
      return answer(res, shown);
    },

    "sandbox.list": async (c) => {
      const page = await ownedPage(c, services, callerTenant(c), { path: "/api/sandboxes", field: "sandboxes", kind: "sandbox" });
      if ("passthrough" in page) return page.passthrough;
      const sandboxes = await Promise.all(page.items.map((s) => present(c, s)));
      return c.json({ sandboxes, totalCount: page.totalCount, page: page.page, perPage: page.perPage });
    },

    "sandbox.get": async (c) => {
      const res = await upstream.call(c, { method: "GET", path: pathAndQuery(c) });
      if (!res.ok) return Upstream.relay(res);
      return answer(res, await present(c, await upstreamJson(res, SandboxDetail)));
    },

    "sandbox.stop": async (c) => {
      const id = c.req.param("id")!;
      const res = await upstream.call(c, { method: "PUT", path: pathAndQuery(c), headers: c.req.raw.headers, body: null });
      if (res.ok) {
        await services.stores.ownership.setActive("sandbox", id, false);
        await custody.forget(id);
        await settleResource(services, "sandbox", id, c);
      }
      return Upstream.relay(res);
    },

    // A network update keeps the sandbox's egress floor (./secret-env.ts): the secrets' hosts stay denied.
    "sandbox.network": async (c) => {
      const body = { ...(await jsonBody(c, services.platform)).json };
      return Upstream.relay(await forwardJson(c, JSON.stringify(await withEgressFloor(services, callerTenant(c).id, body))));
    },

    "sandbox.snapshot": async (c) => {
      const res = await forwardJson(c, (await jsonBody(c, services.platform)).text || "{}");
      if (!res.ok) return Upstream.relay(res);
      const snap = await upstreamJson(res, SnapshotAnswer);
      if (snap.snapshotId)
        await claimSnapshot(services, callerTenant(c), String(snap.snapshotId), snap.snapshotName, c.get("upstreamAccount"));
      return answer(res, snap);
    },

    "sandbox.expose": async (c) => {
      const id = c.req.param("id")!;
      const res = await forwardJson(c, (await jsonBody(c, services.platform)).text || "{}");
      if (!res.ok) return Upstream.relay(res);
      const ctx = tenantRewriteContext(c, services, callerTenant(c));
      await rememberPublicHost(services, id, ctx.publicOrigin);
      return answer(res, await rewriteExposure(await upstreamJson(res), id, ctx));
    },

    "snapshot.list": async (c) => {
      const page = await ownedPage(c, services, callerTenant(c), { path: "/api/snapshots", field: "snapshots", kind: "snapshot" });
      if ("passthrough" in page) return page.passthrough;
      return c.json({ snapshots: page.items, totalCount: page.totalCount, page: page.page, perPage: page.perPage });
    },

    // Snapshots are addressed by id or by name; a name resolves within the caller's own snapshots only.
    "snapshot.byIdOrName": async (c) => {
      const id = await resolveOwnedSnapshot(services, callerTenant(c), c.req.param("idOrName")!);
      const res = await upstream.call(c, {
        method: c.req.method,
        path: `/api/snapshots/${encodeURIComponent(id)}`,
        headers: c.req.raw.headers,
        body: null,
      });
      return Upstream.relay(res);
    },
  };
}
