import { describe, expect, it } from "vitest";
import { secretChangeDetail, tenantChangeDetail } from "./audit-detail.js";

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

describe("secretChangeDetail", () => {
  const rules = { name: "OPENAI", hosts: ["api.openai.com"], header: "authorization", format: "Bearer {}", sandboxes: "all", version: 1 };

  it("names the secret and each rule that changed, old → new", () => {
    expect(
      secretChangeDetail("secret.update", "secret:acme/OPENAI", rules, {
        ...rules,
        hosts: ["api.openai.com", "eu.api.openai.com"],
        methods: ["POST"],
        version: 2,
      }),
    ).toBe("OPENAI: hosts api.openai.com → api.openai.com, eu.api.openai.com; methods any → POST; value written (version 1 → 2)");
    expect(secretChangeDetail("secret.update", "secret:acme/OPENAI", rules, { ...rules, version: 2 })).toBe(
      "OPENAI: rules unchanged; value written (version 1 → 2)",
    );
  });

  it("says what a created or deleted secret's rules were", () => {
    expect(secretChangeDetail("secret.create", "secret:acme/OPENAI", undefined, rules)).toBe(
      "OPENAI created: hosts api.openai.com; methods any; paths any; header authorization: Bearer {}",
    );
    expect(secretChangeDetail("secret.delete", "secret:acme/OPENAI", { ...rules, paths: ["/v1/"] }, undefined)).toBe(
      "OPENAI deleted (was hosts api.openai.com; methods any; paths /v1/; header authorization: Bearer {})",
    );
  });
});
