// What every console page handler shares (./handlers/*): the page's context and its viewer, rendering, reading a posted
// form, the actor of an action (for the audit log), and which tenants the viewer may see or change.
import type { Context } from "hono";
import type { Child } from "hono/jsx";
import type * as z from "zod";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import type { Tenant } from "../identity/tenants.js";
import type { HandlerName } from "../routing/handler-names.js";
import type { Actor } from "../operators/actions/actor.js";
import { audit } from "../operators/actions/tenant-changes.js";
import { actorOf } from "../operators/http/actor.js";
import type { ConsoleSession } from "../identity/console-session.js";
import { managesKeysOf, type Viewer } from "./pages/layout.js";

export type ConsoleEnv = { Variables: { nonce: string; session: ConsoleSession; viewer: Viewer } };
export type C = Context<ConsoleEnv>;
/** A console page: its row's handler, run with the console's context. */
export type Page = (c: C) => Response | Promise<Response>;
/** A family's pages by their rows' handler names (src/routing/own-rows.ts). */
export type Pages = Partial<Record<HandlerName, Page>>;

/** The gateway's view of a console context (the chain's caller, the request id, the acting tenant). */
export const asGatewayContext = (c: C) => c as unknown as Context<GatewayEnv>;
export const asConsoleContext = (c: Context<GatewayEnv>) => c as unknown as C;

/** Who acts on a console page (the signed-in tenant, the request): the operator actions' actor. */
export const actor = (c: C): Actor => actorOf(asGatewayContext(c));

/** Records a console action in the audit log, under the tenant acting. */
export const record = (services: GatewayServices, c: C, action: string, target: string, after?: unknown) =>
  audit(services, actor(c), action, target, undefined, after);

export const AUDIT_SCAN = 500;
export const RESOURCE_ID = /^[A-Za-z0-9_.:-]{1,128}$/;
export const DAY = /^\d{4}-\d{2}-\d{2}$/;

export const pick = <T extends string>(value: string | undefined, allowed: readonly T[]): T | undefined =>
  allowed.includes(value as T) ? (value as T) : undefined;

/** A path parameter of the page's row ("" when the row has none by that name). */
export const param = (c: C, name: string): string => c.req.param(name) ?? "";

type Form = Record<string, string | File | Array<string | File>>;

/** The posted form's fields (repeated ones as arrays); a body that is no form is a 400 page, not a crash. */
export async function formOf(c: C): Promise<Form> {
  try {
    // Hono keeps the first parse: every caller asks for the same shape.
    return (await c.req.parseBody({ all: true })) as Form;
  } catch {
    throw new GatewayError(400, "invalid_form", "This form could not be read; reload the page and try again.");
  }
}

/** One text field, trimmed ("" when absent or a file). */
export const field = (form: Form, name: string): string => {
  const v = form[name];
  const one = Array.isArray(v) ? v[0] : v;
  return typeof one === "string" ? one.trim() : "";
};
export const fields = (form: Form, name: string): string[] => {
  const v = form[name];
  return (Array.isArray(v) ? v : v === undefined ? [] : [v]).filter((x): x is string => typeof x === "string");
};
/** A number field: undefined when blank, NaN-free numbers otherwise (the schema says what is wrong with them). */
export const numberField = (form: Form, name: string): number | string | undefined => {
  const v = field(form, name);
  if (!v) return undefined;
  return /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
};
export const withoutUndefined = (o: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== ""));

/** Runs a zod schema over a form's values; a problem is a 400 naming the field, as the admin API would. */
export function formValue<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const r = schema.safeParse(value);
  if (!r.success)
    throw new GatewayError(
      400,
      "invalid_form",
      r.error.issues.map((i) => `${i.path.map(String).join(".") || "form"}: ${i.message}`).join("; "),
    );
  return r.data;
}

export function render(c: C, node: Child, status: 200 | 201 | 400 | 401 | 403 | 404 | 409 | 502 | 503 = 200) {
  return c.html(`<!doctype html>${node}`, status);
}

/** The tenants the viewer sees: an operator every one (by id), a tenant itself. */
export const visibleTenants = (services: GatewayServices, c: C): Tenant[] => {
  const v = c.get("viewer");
  return v.admin ? services.directory.list().sort((a, b) => a.id.localeCompare(b.id)) : [services.directory.get(v.tenant)!];
};

/** A tenant the viewer may see, or 404 (a tenant key cannot tell another tenant's resources exist). */
export const visibleTenant = (services: GatewayServices, c: C, id: string): Tenant => {
  const v = c.get("viewer");
  const t = v.admin || id === v.tenant ? services.directory.get(id) : undefined;
  if (!t) throw new GatewayError(404, "not_found", `No tenant "${id}" here.`);
  return t;
};

export const requireAdmin = (c: C) => {
  if (!c.get("viewer").canEdit) throw new GatewayError(403, "missing_scope", "Only an admin key can do this.");
};

/** The tenant whose keys the viewer may manage (an admin any, a tenant its own), or 404/403. */
export const keyTenant = (services: GatewayServices, c: C, id: string): Tenant => {
  const t = visibleTenant(services, c, id);
  if (!managesKeysOf(c.get("viewer"), t.id)) throw new GatewayError(403, "missing_scope", "Only an admin key can do this.");
  return t;
};
