// The secrets check shared by the sandbox suites: nothing the upstream issued reaches a client, a log line or the
// tenants' request log (docs/request-logs.md).
import { expect } from "vitest";
import type { SandboxStack } from "./sandboxes-harness.js";

export async function assertNoUpstreamSecrets(s: SandboxStack): Promise<void> {
  const secrets = s.upstreamSecrets();
  // The API key, the runtime host, and at least one runtime token were learned, so the scan means something.
  expect(secrets.length).toBeGreaterThan(3);
  const sent = s.clientBytes();
  const logs = s.logs.join("\n");
  await s.gw.gateway.services.requests?.flush();
  const requestLog = JSON.stringify(await Promise.all(["alice", "bob"].map((t) => s.gw.gateway.stores.requests.list(t, 10_000))));
  expect(sent.length).toBeGreaterThan(0);
  expect(logs.length).toBeGreaterThan(0);
  expect(requestLog).toContain('"status"'); // the suite's requests were recorded, so the scan means something
  for (const secret of secrets) {
    expect(sent.includes(secret), `client bytes carry upstream secret ${secret.slice(0, 12)}…`).toBe(false);
    expect(logs.includes(secret), `logs carry upstream secret ${secret.slice(0, 12)}…`).toBe(false);
    expect(requestLog.includes(secret), `the request log carries upstream secret ${secret.slice(0, 12)}…`).toBe(false);
  }
}
