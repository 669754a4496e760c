// A grant carries the agent policy its consent chose (docs/agent-policies.md#grants): the consent page offers the
// tenant's named policies (`tenants[].agentPolicies`), the grant records the one picked, and every token it mints
// carries its rules, enforced on every surface (an MCP tool call and the same row over HTTP). Driven with the MCP SDK's
// OAuthClientProvider flow. And the credential tree's grant branch: a sandbox created with a grant's token hands out a
// runtime token that dies with the grant.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";
import { type ConsentChoices, consentForm, MemoryOAuthProvider, postForm } from "../helpers/mcp-oauth.js";

let stack: SessionGateway;
let base: string;
const clients: Client[] = [];

beforeAll(async () => {
  stack = await startSessionGateway(
    [
      {
        id: "acme",
        scopes: ["search", "jobs", "sandboxes"],
        agentPolicies: { "docs-only": { domains: { allow: ["docs.example"] } }, "node-only": { images: ["node"] } },
      },
    ],
    { modules: ["jobs", "sandboxes"] },
  );
  base = stack.gateway.url;
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await stack?.close();
});

const key = () => stack.keys.acme!;
const call = (c: Client, name: string, args: Record<string, unknown>) =>
  c.callTool({ name, arguments: args }, undefined, { timeout: 60_000 }) as Promise<CallToolResult>;
const toolError = (r: CallToolResult) => {
  expect(r.isError).toBe(true);
  return JSON.parse((r.content.find((p) => p.type === "text") as { text: string }).text);
};
const grants = async () =>
  (await (await fetch(`${base}/_tollgate/grants`, { headers: { "x-api-key": key() } })).json()).grants as Array<Record<string, any>>;

/** The MCP SDK's whole flow (401 → discovery → registration → consent with `choices` → code → tokens), connected. */
async function connectWith(choices: Omit<ConsentChoices, "credential">) {
  const provider = new MemoryOAuthProvider("Policy Agent");
  const url = new URL(`${base}/mcp`);
  const first = new StreamableHTTPClientTransport(url, { authProvider: provider });
  await expect(new Client({ name: "policies", version: "1" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  const page = await (await fetch(provider.authUrl!, { redirect: "manual" })).text();
  // The page asks for the policy (the tenant is not known before the sign-in, so by name).
  expect(page).toContain('name="agent_policy"');
  const back = await postForm(fetch, `${base}/authorize`, consentForm(page, { credential: key(), ...choices }));
  expect(back.status).toBe(302);
  await first.finishAuth(new URL(back.headers.get("location")!).searchParams.get("code")!);
  const client = new Client({ name: "policies", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
  clients.push(client);
  return { client, token: provider.saved!.access_token };
}

describe("a grant carries the agent policy its consent chose", () => {
  it("a tool call the chosen policy refuses is refused with policy_denied, over MCP and over HTTP with the same token", async () => {
    const { client, token } = await connectWith({ scopes: ["jobs"], agentPolicy: "docs-only" });
    const refused = toolError(await call(client, "scrape", { url: "https://elsewhere.example/page" }));
    expect(refused).toMatchObject({ status: 403, code: "policy_denied", policy: "domains.allow", field: "url", by: "token" });
    const http = await fetch(`${base}/api/scrape`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ url: "https://elsewhere.example/page" }),
    });
    expect(http.status).toBe(403);
    expect(await http.json()).toMatchObject({ code: "policy_denied", policy: "domains.allow", by: "token" });
    // What the policy allows passes its step (the emulator then answers the job).
    const allowed = await fetch(`${base}/api/scrape`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ url: "https://docs.example/guide" }),
    });
    expect((await allowed.json()).code).not.toBe("policy_denied");
    // The grant names its policy where the tenant lists its grants.
    const mine = (await grants()).find((g) => g.client.name === "Policy Agent" && g.agentPolicy);
    expect(mine).toMatchObject({ agentPolicy: "docs-only", scopes: ["jobs"] });
  });

  it("a grant consented without a policy is held to the tenant's own policy only", async () => {
    const { token } = await connectWith({ scopes: ["jobs"], agentPolicy: "" });
    const r = await fetch(`${base}/api/scrape`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ url: "https://elsewhere.example/page" }),
    });
    expect((await r.json()).code).not.toBe("policy_denied");
  });

  it("a name the tenant does not have is refused on the consent page after sign-in, naming the ones it has", async () => {
    const provider = new MemoryOAuthProvider("Unknown Policy Agent");
    const first = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
    await expect(new Client({ name: "policies", version: "1" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    const page = await (await fetch(provider.authUrl!, { redirect: "manual" })).text();
    const back = await postForm(
      fetch,
      `${base}/authorize`,
      consentForm(page, { credential: key(), scopes: ["jobs"], agentPolicy: "nope" }),
    );
    expect(back.status).toBe(400);
    const text = await back.text();
    expect(text).toContain("has no agent policy &quot;nope&quot;; it has: docs-only, node-only");
    // The page comes back with the name as typed, for another try.
    expect(text).toContain('value="nope"');
  });

  it("a sandbox created with the grant's token is held to its policy, and its runtime token dies with the grant", async () => {
    const { token } = await connectWith({ scopes: ["sandboxes"], agentPolicy: "node-only" });
    const create = (imageName: string) =>
      fetch(`${base}/api/sandbox`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ imageName }),
      });
    const wrong = await create("python");
    expect(wrong.status).toBe(403);
    expect(await wrong.json()).toMatchObject({ code: "policy_denied", policy: "images", by: "token" });
    const made = await create("node");
    expect(made.status).toBe(200);
    const sbx = await made.json();
    const exec = () =>
      fetch(`${base}/sandbox/${sbx.id}/exec`, {
        method: "POST",
        headers: { authorization: `Bearer ${sbx.token}`, "content-type": "application/json" },
        body: JSON.stringify({ command: "echo grant-child" }),
      });
    try {
      const before = await exec();
      expect(before.status).toBe(200);
      expect(await before.text()).toContain("grant-child");
      const grant = (await grants()).find((g) => g.agentPolicy === "node-only" && g.state === "active")!;
      const revoked = await fetch(`${base}/_tollgate/grants/${grant.id}`, { method: "DELETE", headers: { "x-api-key": key() } });
      expect(revoked.status).toBe(200);
      const after = await exec();
      expect(after.status).toBe(401);
      expect((await after.json()).code).toBe("token_revoked");
    } finally {
      await fetch(`${base}/api/sandbox/${sbx.id}/stop`, { method: "PUT", headers: { "x-api-key": key() } }).catch(() => {});
    }
  });
});
