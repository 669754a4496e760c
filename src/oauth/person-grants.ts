// Grants a person consented through the identity provider (src/oauth/oidc-consent.ts) are bound to that person: they
// live while the provider's word on them (src/identity/persons.ts) still makes them a user of the grant's tenant, and
// that word is not older than oauth.personReconfirmSeconds. How the gateway learns the word changed:
// - every sign-in of the person through the provider (the console's or a consent page's) records what it says now, and
//   revokes at once, fleet-wide, each of their grants it no longer allows (their access tokens, and every token those
//   read, refused within the revocation bound; open sockets closed within 2 s more);
// - a grant refreshes only while the word is recent: past oauth.personReconfirmSeconds the refresh is refused (not
//   consumed: the agent goes on once the person signs in again), and no access token outlives that moment;
// - an operator revokes everything a person made (the admin API, `DELETE /_tollgate/admin/grants?person=`).
import type { GatewayServices } from "../services.js";
import { mayConsentFor, recordStanding, standingOf, type PersonStanding } from "../identity/persons.js";
import type { SignedInIdentity } from "../identity/sign-in.js";
import { kvOAuthStore, type OAuthGrant } from "../state/oauth.js";
import { liveGrant, revokeGrant } from "./grants.js";

/** Why a grant ended with its person's right (its revokedReason). */
export const lostRightReason = (person: string, tenant: string) =>
  `the person who consented (${person}) no longer may consent for tenant ${tenant}`;

/**
 * A sign-in through the provider: the person's standing recorded, and each of their live grants it no longer allows
 * revoked (the ones it still allows are confirmed by the same record). Returns the grants revoked.
 */
export async function personSignedIn(
  services: GatewayServices,
  person: string,
  identity: Pick<SignedInIdentity, "role" | "tenant"> | undefined,
): Promise<OAuthGrant[]> {
  const now = services.now();
  const standing = standingOf(identity, now);
  await recordStanding(services, person, standing);
  const store = kvOAuthStore(services.stores.kv);
  const lost = (await store.listPersonGrants(person)).filter((g) => liveGrant(g, now) && !mayConsentFor(standing, g.tenant));
  for (const g of lost) await revokeGrant(services, store, g.id, lostRightReason(person, g.tenant));
  if (lost.length)
    services.logger.info("person's grants revoked at sign-in", { person, role: standing.role ?? "none", grants: lost.map((g) => g.id) });
  return lost;
}

/** Until when (epoch ms) a person's standing lets their grants mint: its confirmation plus oauth.personReconfirmSeconds. */
export const standingUntil = (standing: PersonStanding, reconfirmSeconds: number) => standing.confirmedAt + reconfirmSeconds * 1000;
