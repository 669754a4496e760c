// Sign-in for operators and tenants' people (docs/sign-in.md): an OIDC provider (authorization code + PKCE) for the
// console and the admin API, and on Workers Cloudflare Access's signed JWT. Roles come from claims or groups.
import * as z from "zod";

/**
 * `"<claim>:<value>"`: matches when the claim (a string, or an array such as `groups`) holds the value; `"<claim>:*"`
 * matches any non-empty value. Nested claims are dotted (`"custom.groups:ops"`).
 */
const claimMatch = z
  .string({ error: 'expected "<claim>:<value>", e.g. "groups:platform-admins"' })
  .regex(/^[A-Za-z0-9_.-]+:.+$/, { error: 'expected "<claim>:<value>", e.g. "groups:platform-admins" or "tenant:*"' });

/** Which claims give which role: the first role (admin, then operator-readonly, then tenant) with a match wins. */
export const roleMappingSchema = z
  .strictObject({
    /** `"<claim>:<value>"` rules giving the admin role, e.g. "groups:platform-admins". */
    admin: z.array(claimMatch).default([]),
    /** Rules giving operator-readonly: every tenant seen, nothing changed. */
    "operator-readonly": z.array(claimMatch).default([]),
    /** A tenant user also needs `tenantClaim`, naming an existing tenant. */
    tenant: z.array(claimMatch).default([]),
  })
  .default({ admin: [], "operator-readonly": [], tenant: [] });

const httpUrl = (example: string) =>
  z
    .string({ error: `expected a URL like "${example}"` })
    .refine((s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol), { error: `expected a URL like "${example}"` });

const claimName = z.string().regex(/^[A-Za-z0-9_.-]{1,100}$/, { error: 'expected a claim name like "tenant"' });

export const oidcSchema = z
  .strictObject({
    /** The provider's issuer; its `/.well-known/openid-configuration` is read on first use. http: only on loopback. */
    issuer: httpUrl("https://login.example.com/realms/ops").refine(
      (s) => new URL(s).protocol === "https:" || ["127.0.0.1", "localhost", "[::1]"].includes(new URL(s).hostname),
      { error: "expected an https issuer (http: only for 127.0.0.1 or localhost)" },
    ),
    /** The client id registered at the provider for Tollgate (redirect URI `<public origin>/_tollgate/console/oidc/callback`). */
    clientId: z.string({ error: "expected the client id registered at the provider" }).min(1),
    /** Where the client secret is: an environment variable's name (Node and Workers) … */
    clientSecretEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'expected an environment variable name like "TOLLGATE_OIDC_CLIENT_SECRET"' })
      .optional(),
    /** … or a file (Node: Kubernetes/Docker secrets). Neither: a public client (PKCE only). */
    clientSecretFile: z.string().min(1).optional(),
    /** The scopes asked for; "openid" is required, add the one your provider needs for groups. */
    scopes: z
      .array(z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]+$/, { error: "expected a scope name" }))
      .default(["openid", "profile", "email"]),
    roles: roleMappingSchema,
    /** The claim naming a tenant user's tenant (its id in Tollgate). */
    tenantClaim: claimName.default("tenant"),
    /** The admin API takes `Authorization: Bearer <JWT>` from this issuer with this audience (default: clientId). */
    apiBearer: z.boolean().default(true),
    /** The audience a bearer JWT must carry on the admin API (default: clientId, i.e. ID tokens of this client). */
    apiAudience: z.string().min(1).optional(),
    /** Where the provider sends the browser back after RP-initiated logout (default: the console's sign-in page). */
    postLogoutPath: z
      .string()
      .regex(/^\/[^\s]*$/, { error: 'expected a path like "/_tollgate/console/login"' })
      .optional(),
  })
  .refine((o) => !(o.clientSecretEnv && o.clientSecretFile), {
    error: "give clientSecretEnv or clientSecretFile, not both",
    path: ["clientSecretFile"],
  })
  .refine((o) => o.scopes.includes("openid"), { error: 'expected "openid" among the scopes', path: ["scopes"] });

export const accessSchema = z.strictObject({
  /**
   * The Access team domain, e.g. "myteam.cloudflareaccess.com" (https assumed) or a full origin; its certs are read from
   * `<origin>/cdn-cgi/access/certs` and its tokens' issuer must be that origin.
   */
  teamDomain: z.string({ error: 'expected a team domain like "myteam.cloudflareaccess.com"' }).refine(
    (s) => {
      const u = URL.canParse(s) ? new URL(s) : URL.canParse(`https://${s}`) ? new URL(`https://${s}`) : undefined;
      return (
        !!u &&
        /^https?:$/.test(u.protocol) &&
        (u.pathname === "/" || u.pathname === "") &&
        (u.protocol === "https:" || ["127.0.0.1", "localhost"].includes(u.hostname))
      );
    },
    { error: 'expected a team domain like "myteam.cloudflareaccess.com" (or an https origin)' },
  ),
  /** The Application Audience (AUD) tag of the Access application in front of the gateway. */
  aud: z.string({ error: "expected the Access application's AUD tag" }).min(1),
  /** Role mapping for Access users; default: the same as [operators.oidc.roles]. */
  roles: roleMappingSchema.optional(),
  /** The claim naming a tenant user's tenant; default: [operators.oidc]'s, else "tenant". */
  tenantClaim: claimName.optional(),
});

export const operatorsSchema = z
  .strictObject({
    oidc: oidcSchema.optional(),
    access: accessSchema.optional(),
  })
  .default({});

export type OidcConfig = z.infer<typeof oidcSchema>;
export type AccessConfig = z.infer<typeof accessSchema>;
export type RoleMapping = z.infer<typeof roleMappingSchema>;
