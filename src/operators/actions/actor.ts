// Who does an operator action: the acting tenant (an admin, an operator, or a tenant managing its own keys and
// tokens) and the request it came with. The audit log records both; the lockout guards read the tenant. The HTTP
// faces (src/operators/http/, src/console/) read it off the request: ../http/actor.ts.
export interface Actor {
  /** The acting tenant's id; undefined: nobody known (recorded as "unknown"). */
  tenant?: string;
  /** A person signed in through the identity provider or Cloudflare Access (`oidc:<sub>`, `access:<sub>`): the audit
   * log names them instead of the tenant (their role's stand-in, src/identity/sign-in.ts). */
  person?: string;
  /** The request the action came with, for the audit log. */
  requestId?: string;
}
