// Writing and deleting a tenant's secret (docs/secrets-for-agents.md), as the secrets' API rows
// (../http/secret-routes.ts) and the console's Secrets page (src/console/handlers/secrets.tsx) both do: through the
// vault (src/identity/tenant-secrets.ts), each change in the audit log with the rules before and after, never the value.
import type { GatewayServices } from "../../services.js";
import type { SecretInput, SecretView } from "../../identity/tenant-secrets.js";
import type { Actor } from "./actor.js";
import { audit } from "./tenant-changes.js";

/** A view's rules: what an audit entry keeps of a secret (its last use is no change of it). */
const rulesOf = ({ lastUsedAt: _u, ...rules }: SecretView) => rules;

/** Creates or replaces `tenant`'s secret `name`; audited as `secret.create` or `secret.update`. */
export async function putSecret(
  services: GatewayServices,
  by: Actor,
  tenant: string,
  name: string,
  input: SecretInput,
): Promise<{ created: boolean; view: SecretView; hostsAdded: boolean }> {
  const before = await services.vault.describe(tenant, name);
  const written = await services.vault.put(tenant, name, input);
  const { created, view } = written;
  await audit(
    services,
    by,
    created ? "secret.create" : "secret.update",
    `secret:${tenant}/${name}`,
    before ? rulesOf(before) : undefined,
    rulesOf(view),
  );
  services.logger.info("tenant secret written", { requestId: by.requestId, tenant, name, version: view.version });
  // Hosts it did not name before: the tenant's live sandboxes get them in their egress floor (the caller starts that).
  const hostsAdded = view.hosts.some((h) => !before?.hosts.includes(h));
  return { ...written, hostsAdded };
}

/** Deletes `tenant`'s secret `name` (undefined when there is none); audited as `secret.delete`. */
export async function deleteSecret(services: GatewayServices, by: Actor, tenant: string, name: string): Promise<SecretView | undefined> {
  const view = await services.vault.delete(tenant, name);
  if (!view) return undefined;
  await audit(services, by, "secret.delete", `secret:${tenant}/${name}`, rulesOf(view), undefined);
  services.logger.info("tenant secret deleted", { requestId: by.requestId, tenant, name });
  return view;
}
