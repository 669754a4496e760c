import { describe, expect, it } from "vitest";
import { tenantChangeDetail } from "./audit-detail.js";

describe("tenantChangeDetail", () => {
  it("names each changed field with its old and new value", () => {
    expect(
      tenantChangeDetail(
        { id: "acme", budget: { daily: "5.00" }, scopes: ["search"], quotas: {} },
        { id: "acme", budget: { daily: "7.50" }, scopes: ["search", "jobs"], quotas: { maxSandboxes: 2 } },
      ),
    ).toBe('budget.daily 5.00 → 7.50; scopes ["search"] → ["search","jobs"]; quotas.maxSandboxes — → 2');
  });

  it("names keys and secrets without their values", () => {
    const d = tenantChangeDetail(
      { keys: [{ id: "k1", hash: "sha256:aaaa" }], alerts: { webhookSecret: "s3cret-one" } },
      { keys: [{ id: "k2", hash: "sha256:bbbb" }], alerts: { webhookSecret: "s3cret-two" } },
    );
    expect(d).toBe("keys changed; alerts.webhookSecret changed");
    for (const secret of ["sha256:", "s3cret"]) expect(d).not.toContain(secret);
  });

  it("shows a tenant's named agent policies old -> new (issue 53)", () => {
    const before = { agentPolicies: { docs: { domains: { allow: ["docs.example"] } } } };
    const after = { agentPolicies: { docs: { domains: { allow: ["docs.example", "api.example"] } }, node: { images: ["node"] } } };
    expect(tenantChangeDetail(before, after)).toBe(
      'agentPolicies.docs.domains.allow ["docs.example"] → ["docs.example","api.example"]; agentPolicies.node — → {"images":["node"]}',
    );
  });

  it("says when nothing changed", () => {
    expect(tenantChangeDetail({ a: 1 }, { a: 1 })).toBe("no change");
  });
});
