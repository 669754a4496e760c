// A person signed in through the identity provider is a parent on the credential tree (docs/security.md): what they
// made as a tenant user (an OAuth grant they consented, a console session) lives while the provider still says they
// are that tenant's user. The gateway learns what the provider says at each sign-in of the person (the console's or a
// consent page's: the ID token and userinfo, read fresh), and keeps it, fleet-wide, as the person's *standing*. A
// standing that no longer gives the right ends what the person made; one not confirmed for too long suspends their
// grants until they sign in again (src/oauth/person-grants.ts, oauth.personReconfirmSeconds). Web standards only.
import type { GatewayServices } from "../services.js";
import { stateKeys } from "../state/keys.js";
import type { OperatorRole } from "./roles.js";
import type { SignedInIdentity } from "./sign-in.js";

/** What the provider said of a person at their last sign-in: the role its claims mapped to (none: no role), and when. */
export interface PersonStanding {
  role?: OperatorRole;
  /** The tenant a tenant user's claim named. */
  tenant?: string;
  /** Epoch ms of that sign-in. */
  confirmedAt: number;
}

/** Kept longer than any grant lives (oauth.maxGrantDays is at most 365): a grant never outlives its person's word. */
const STANDING_TTL_MS = 400 * 86_400_000;

/** The standing a sign-in's mapped identity (undefined: no role matched) gives, at `now`. */
export function standingOf(identity: Pick<SignedInIdentity, "role" | "tenant"> | undefined, now: number): PersonStanding {
  return { ...(identity ? { role: identity.role, ...(identity.tenant ? { tenant: identity.tenant } : {}) } : {}), confirmedAt: now };
}

/** The same rule as the consent page's (roles.ts): only a tenant user consents, and only for the tenant their claim names. */
export function mayConsentFor(standing: Pick<PersonStanding, "role" | "tenant">, tenant: string): boolean {
  return standing.role === "tenant" && standing.tenant === tenant;
}

/** The person's standing as last recorded, fleet-wide; undefined when the gateway has none. */
export async function readStanding(services: Pick<GatewayServices, "stores">, person: string): Promise<PersonStanding | undefined> {
  const raw = await services.stores.kv.get(stateKeys.personStanding(person));
  return raw === undefined ? undefined : (JSON.parse(raw) as PersonStanding);
}

/** Records what the provider said at a sign-in; the standing it replaced (to compare), if any. */
export async function recordStanding(
  services: Pick<GatewayServices, "stores">,
  person: string,
  standing: PersonStanding,
): Promise<PersonStanding | undefined> {
  const before = await readStanding(services, person);
  await services.stores.kv.set(stateKeys.personStanding(person), JSON.stringify(standing), STANDING_TTL_MS);
  return before;
}

/**
 * Whether a console session a person opened still stands: the role and tenant it was opened with are still what the
 * provider last said (a later sign-in that mapped them otherwise ends it, on every instance). A person with no standing
 * recorded (signed in before standings existed, or through Cloudflare Access, whose header is checked on each request)
 * keeps the session for its life.
 */
export async function sessionPersonStands(
  services: Pick<GatewayServices, "stores">,
  identity: Pick<SignedInIdentity, "via" | "sub" | "role" | "tenant">,
): Promise<boolean> {
  if (identity.via !== "oidc") return true;
  const standing = await readStanding(services, `oidc:${identity.sub}`);
  return !standing || (standing.role === identity.role && (standing.tenant ?? undefined) === (identity.tenant ?? undefined));
}
