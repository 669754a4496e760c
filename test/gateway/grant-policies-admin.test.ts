// A tenant's named agent policies set through the admin API (issue 53; docs/agent-policies.md#grants), on a tenant
// the admin API owns: validated as the config file's are (errors name the field), audited old -> new, offered by the
// consent page from then on, and enforced on the grant consented with one (403 policy_denied on an HTTP row and on an
// MCP tool call, driven with the MCP SDK's OAuthClientProvider flow); config as code exports and applies them; a
// tenant the gateway's config file owns refuses them (409 config_conflict).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";
import { consentForm, MemoryOAuthProvider, postForm } from "../helpers/mcp-oauth.js";

let stack: SessionGateway;
let base: string;
let apico = ""; // the key of a tenant the admin API made
const clients: Client[] = [];

const admin = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${base}/_tollgate/admin${path}`, {
    method,
    headers: { "x-api-key": stack.keys.ops!, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
};

beforeAll(async () => {
  stack = await startSessionGateway(
    [
      { id: "ops", scopes: ["admin"] },
      { id: "acme", scopes: ["jobs"], agentPolicies: { "docs-only": { domains: { allow: ["docs.example"] } } } },
    ],
    { modules: ["jobs"] },
  );
  base = stack.gateway.url;
  const made = await admin("POST", "/tenants", { id: "apico", scopes: ["search", "jobs"] });
  expect(made.status).toBe(201);
  apico = made.json.key;
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await stack?.close();
});

/** The consent page for a new MCP client, and the SDK's transport waiting for the code. */
async function consentPage(name: string) {
  const provider = new MemoryOAuthProvider(name);
  const url = new URL(`${base}/mcp`);
  const first = new StreamableHTTPClientTransport(url, { authProvider: provider });
  await expect(new Client({ name: "policies", version: "1" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  const page = await (await fetch(provider.authUrl!, { redirect: "manual" })).text();
  return { provider, url, first, page };
}

describe("named agent policies through the admin API", () => {
  it("refuses a malformed one naming the field, on the whole-tenant PATCH and on the section's PUT", async () => {
    const patch = await admin("PATCH", "/tenants/apico", { agentPolicies: { "Bad Name": {}, ok: { maxCrawlPages: -1 } } });
    expect(patch.status).toBe(400);
    expect(patch.json.code).toBe("invalid_body");
    const fields = patch.json.fields.map((f: any) => f.field);
    expect(fields).toEqual(expect.arrayContaining(["agentPolicies.Bad Name", "agentPolicies.ok.maxCrawlPages"]));
    const put = await admin("PUT", "/tenants/apico/agentPolicies", { docs: { domains: { allow: ["not a host"] }, colour: "red" } });
    expect(put.status).toBe(400);
    expect(put.json.message).toContain("docs.domains.allow.0");
    expect(put.json.message).toContain("docs");
    expect((await admin("GET", "/tenants/apico")).json.agentPolicies).toBeUndefined();
  });

  it("a name is refused at consent until the admin API sets it; then it is offered, audited old -> new", async () => {
    const before = await consentPage("Before Agent");
    const refused = await postForm(
      fetch,
      `${base}/authorize`,
      consentForm(before.page, { credential: apico, scopes: ["jobs"], agentPolicy: "api-docs" }),
    );
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("has no agent policy &quot;api-docs&quot;");

    const set = await admin("PUT", "/tenants/apico/agentPolicies", { "api-docs": { domains: { allow: ["docs.example"] } } });
    expect(set.status).toBe(200);
    expect(set.json.agentPolicies).toEqual({ "api-docs": { domains: { allow: ["docs.example"] } } });
    const entry = (await admin("GET", "/audit?limit=20")).json.entries.find((e: any) => e.action === "tenant.agentPolicies");
    expect(entry).toMatchObject({ actor: "ops", target: "tenant:apico", after: { agentPolicies: { "api-docs": {} } } });
    expect(entry.before.agentPolicies).toBeUndefined();
    // A second change records the old rules beside the new ones.
    const widened = { "api-docs": { domains: { allow: ["docs.example", "api.example"] } } };
    expect((await admin("PATCH", "/tenants/apico", { agentPolicies: widened })).status).toBe(200);
    const update = (await admin("GET", "/audit?limit=20")).json.entries.find((e: any) => e.action === "tenant.update");
    expect(update.before.agentPolicies).toEqual({ "api-docs": { domains: { allow: ["docs.example"] } } });
    expect(update.after.agentPolicies).toEqual(widened);
    // Back to the one rule for the grant below.
    expect((await admin("PUT", "/tenants/apico/agentPolicies", { "api-docs": { domains: { allow: ["docs.example"] } } })).status).toBe(200);
  });

  it("a grant consented with it is held to it: 403 policy_denied on an MCP tool call and on the HTTP row", async () => {
    const { provider, url, first, page } = await consentPage("Admin Policy Agent");
    const back = await postForm(
      fetch,
      `${base}/authorize`,
      consentForm(page, { credential: apico, scopes: ["jobs"], agentPolicy: "api-docs" }),
    );
    expect(back.status).toBe(302);
    await first.finishAuth(new URL(back.headers.get("location")!).searchParams.get("code")!);
    const client = new Client({ name: "policies", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
    clients.push(client);
    const r = (await client.callTool({ name: "scrape", arguments: { url: "https://elsewhere.example/page" } }, undefined, {
      timeout: 60_000,
    })) as CallToolResult;
    expect(r.isError).toBe(true);
    const refusal = JSON.parse((r.content.find((p) => p.type === "text") as { text: string }).text);
    expect(refusal).toMatchObject({ status: 403, code: "policy_denied", policy: "domains.allow", field: "url", by: "token" });
    const http = await fetch(`${base}/api/scrape`, {
      method: "POST",
      headers: { authorization: `Bearer ${provider.saved!.access_token}`, "content-type": "application/json" },
      body: JSON.stringify({ url: "https://elsewhere.example/page" }),
    });
    expect(http.status).toBe(403);
    expect(await http.json()).toMatchObject({ code: "policy_denied", policy: "domains.allow", by: "token" });
    const grants = (await (await fetch(`${base}/_tollgate/grants`, { headers: { "x-api-key": apico } })).json()).grants;
    expect(grants.find((g: any) => g.client.name === "Admin Policy Agent")).toMatchObject({ agentPolicy: "api-docs" });
  });

  it("config as code exports them and applies a change to them; a tenant the config file owns refuses them (409)", async () => {
    const exported = (await admin("GET", "/config/export?format=json")).json;
    const mine = exported.tenants.find((t: any) => t.id === "apico");
    expect(mine.agentPolicies).toEqual({ "api-docs": { domains: { allow: ["docs.example"] } } });
    mine.agentPolicies["node-only"] = { images: ["node"] };
    const bad = structuredClone(exported.tenants);
    bad.find((t: any) => t.id === "apico").agentPolicies["Nope!"] = {};
    const refused = await admin("POST", "/config/apply", { document: { tenants: bad } });
    expect(refused.status).toBe(400);
    expect(refused.json.message).toMatch(/tenants\[\d+\]\.agentPolicies\.Nope!/);
    const applied = await admin("POST", "/config/apply", { document: { tenants: exported.tenants } });
    expect(applied.status, JSON.stringify(applied.json)).toBe(200);
    expect(applied.json.sections.tenants.changes).toEqual([{ id: "apico", action: "update", fields: ["agentPolicies.node-only"] }]);
    expect((await admin("GET", "/tenants/apico")).json.agentPolicies["node-only"]).toEqual({ images: ["node"] });

    const owned = await admin("PUT", "/tenants/acme/agentPolicies", { wide: {} });
    expect(owned.status).toBe(409);
    expect(owned.json).toMatchObject({ code: "config_conflict", tenant: "acme", fields: ["agentPolicies"] });
    expect((await admin("GET", "/tenants/acme")).json.agentPolicies).toEqual({ "docs-only": { domains: { allow: ["docs.example"] } } });
  });
});
