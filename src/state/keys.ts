// The keys of the shared key-value store (KeyValueStore), named in one place: every prefix the gateway writes, so two
// features never collide and an operator reading Redis can tell what a key holds. Backends add their own namespace.

export const stateKeys = {
  /** What the identity provider last said of a person (`oidc:<sub>`) at a sign-in (src/identity/persons.ts). */
  personStanding: (person: string) => `person:standing:${person}`,
  /** Fixed-window rate-limit counter of one key, for the window starting at `windowStart` (ms). */
  rateWindow: (key: string, windowStart: number) => `rl:${key}:${windowStart}`,
  /** Creations of a kind in flight for a tenant, per time bucket (middleware/quota/slots.ts). */
  quotaPending: (kind: string, tenant: string, bucket: number) => `quota:pending:${kind}:${tenant}:${bucket}`,
  /** The upstream runtime credential of a sandbox (src/sandboxes/custody.ts). */
  sandboxRuntime: (id: string) => `sandbox-runtime:${id}`,
  /** A presigned file URL behind a gateway ticket (src/sandboxes/presign.ts). */
  presignTicket: (ticket: string) => `sandbox-presign:${ticket}`,
  /** A public host the gateway handed out for a sandbox's ports (src/sandboxes/port-hosts.ts). */
  sandboxPublicHost: (id: string, host: string) => `sandbox-public-host:${id}:${host}`,
  /** A tenant's snapshot name → its newest snapshot id (src/sandboxes/snapshots.ts). */
  snapshotName: (tenant: string, name: string) => `snapshot-name:${tenant}:${name}`,
  /** A session's upstream endpoints (wsEndpoint, computerActionEndpoint), kept server-side. */
  sessionEndpoints: (id: string) => `session:upstream:${id}`,
  /** Set when a session was created with viewOnlyLiveView: its live view forwards no input. */
  sessionViewOnly: (id: string) => `session:viewonly:${id}`,
  /** The managementToken of a session bought over x402. */
  x402SessionManagement: (id: string) => `session:x402mgmt:${id}`,
  /** When a paid (x402) session ends, for its quota slot. */
  paidSession: (id: string) => `session:paid:${id}`,
  /** Cache and coalescing savings of a tenant across the fleet, one counter per figure (src/operators/actions/savings.ts). */
  savings: (tenant: string, figure: "hits" | "coalesced" | "saved") => `savings:${tenant}:${figure}`,
  /** A credits hold of a running resource or job (middleware/meter/index.ts). */
  creditsHold: (kind: string, id: string) => `credits:hold:${kind}:${id}`,
  /** The cost of every credit settlement so far, fleet-wide, atomic units (src/payments/credit-reports.ts). */
  creditsSettledCost: "credits:settled-cost",
  /** The settled cost of one upstream account's credit spend (with [[upstream.accounts]]). */
  creditsSettledCostOf: (account: string) => `credits:settled-cost:${account}`,
  /** The upstream account a credit-settled ledger entry's spend went to (with [[upstream.accounts]]). */
  creditsEntryAccount: (entry: string) => `credits:entry-account:${entry}`,
  /** Once-per-entry marker of a settled session's or sandbox's upstream figure read once more by a reconciler. */
  creditsRechecked: (entry: string) => `credits:rechecked:${entry}`,
  /** Once-per-entry marker of a credit settlement above its hold alerted. */
  creditsOverHold: (entry: string) => `credits:over-hold:${entry}`,
  /** Once-per-entry marker of a refused upstream report alerted (src/payments/report-screen.ts). */
  creditsReportRefused: (entry: string) => `credits:report-refused:${entry}`,
  /** The drift check's starting point, last figure and once-marker of its alert (src/payments/credit-drift.ts). */
  creditsDrift: (what: "baseline" | "last" | "alerted", account?: string) =>
    account === undefined ? `credits:drift:${what}` : `credits:drift:${what}:${account}`,
  /** The fleet-wide lock on changes to admin tenants (src/operators/actions/tenant-changes.ts): the last-admin-key guard. */
  adminChangeLock: "admin:change-lock",
  /** The fleet-wide lock on config applies (src/operators/actions/config-state.ts): one apply at a time. */
  configApplyLock: "config:apply-lock",
  /** The file last applied to the fleet (its managed sections, who, when): what the drift view compares with. */
  configLastApplied: "config:last-applied",
  /** A gateway token minted by POST /_tollgate/tokens, for its later revocation. */
  mintedToken: (jti: string) => `token:minted:${jti}`,
  /** One revoked gateway token. */
  revokedToken: (jti: string) => `revoked:${jti}`,
  /** How many revocations the fleet has made: instances reread it to know their cached "not revoked" still holds. */
  revocations: "revocations",
  /** Every token of an OAuth grant (src/oauth/) is revoked. */
  revokedGrant: (grant: string) => `revoked-grant:${grant}`,
  /** Every token of a tenant issued before the stored second is revoked. */
  revokedTenant: (tenant: string) => `revoked-tenant:${tenant}`,
  /** Once-per-window marker of a budget alert threshold announced (src/payments/budgets/thresholds.ts). */
  budgetAlert: (tenant: string, window: string, period: string, threshold: number) => `alert:${tenant}:${window}:${period}:${threshold}`,
  /** Once-per-window marker of a budget exhaustion announced (src/payments/budgets/exhaustion.ts). */
  budgetExhausted: (tenant: string, window: string, period: string) => `exhausted:${tenant}:${window}:${period}`,
  /** Read by a readiness probe of the Durable Object backend. */
  ping: "tollgate:ping",
} as const;
