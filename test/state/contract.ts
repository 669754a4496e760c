// The state contract: one suite per interface that every backend (memory, Redis, Durable Objects) must pass.
// Imports nothing Node-only: the same module runs in Node and inside workerd.
import { describe, expect, it } from "vitest";
import { opener, type ContractBackend } from "./contract-backend.js";
import { ledgerContract } from "./contract-ledger.js";
import { idempotencyContract, kvContract, ownershipContract, rateLimiterContract } from "./contract-maps.js";
import { auditLogContract, setIfAbsentContract, tenantStoreContract } from "./contract-tenants.js";
import { outboxContract } from "./contract-outbox.js";
import { oauthContract } from "./contract-oauth.js";
import { requestLogContract } from "./contract-requests.js";
import { accountSlotsContract } from "./contract-account-slots.js";
import { secretsContract } from "./contract-secrets.js";
import { dueContract } from "./contract-due.js";

/** Every interface's suite. */
export function stateContract(b: ContractBackend) {
  ledgerContract(b);
  ownershipContract(b);
  kvContract(b);
  idempotencyContract(b);
  rateLimiterContract(b);
  setIfAbsentContract(b);
  tenantStoreContract(b);
  auditLogContract(b);
  outboxContract(b);
  oauthContract(b);
  requestLogContract(b);
  accountSlotsContract(b);
  dueContract(b);
  secretsContract(b);
  pingContract(b);
}

/** Readiness asks the backend for a round trip. */
export function pingContract(b: ContractBackend) {
  describe(`StateStores.ping (${b.name})`, () => {
    const open = opener(b);
    it("resolves while the backend answers", async () => {
      const stores = await open.fresh();
      await expect(stores.ping()).resolves.toBeUndefined();
    });
  });
}

export type { ContractBackend };
export {
  ledgerContract,
  ownershipContract,
  kvContract,
  idempotencyContract,
  rateLimiterContract,
  tenantStoreContract,
  auditLogContract,
  setIfAbsentContract,
  outboxContract,
};
