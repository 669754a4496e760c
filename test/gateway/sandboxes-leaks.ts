// The secrets check shared by the sandbox suites: nothing the upstream issued reaches a client or a log line.
import { expect } from "vitest";
import type { SandboxStack } from "./sandboxes-harness.js";

export function assertNoUpstreamSecrets(s: SandboxStack): void {
  const secrets = s.upstreamSecrets();
  // The API key, the runtime host, and at least one runtime token were learned, so the scan means something.
  expect(secrets.length).toBeGreaterThan(3);
  const sent = s.clientBytes();
  const logs = s.logs.join("\n");
  expect(sent.length).toBeGreaterThan(0);
  expect(logs.length).toBeGreaterThan(0);
  for (const secret of secrets) {
    expect(sent.includes(secret), `client bytes carry upstream secret ${secret.slice(0, 12)}…`).toBe(false);
    expect(logs.includes(secret), `logs carry upstream secret ${secret.slice(0, 12)}…`).toBe(false);
  }
}
