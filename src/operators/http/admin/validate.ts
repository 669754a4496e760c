// Reads and validates an admin request with zod; every problem is named by its field in one 400 `{message, code}`.
import type { Context } from "hono";
import type * as z from "zod";
import { GatewayError } from "../../../errors.js";
import { jsonValue } from "../../../routing/json-body.js";
import type { PlatformSpeed } from "../../../web/speed.js";

/** A whole tenant (settings, quotas, alert rules) fits in a few kilobytes; this is generous. */
const ADMIN_BODY_LIMIT = 256 * 1024;

function describe(error: z.ZodError): { message: string; fields: Array<{ field: string; problem: string }> } {
  const fields = error.issues.map((i) => ({ field: i.path.map(String).join(".") || "(body)", problem: i.message }));
  return { message: fields.map((f) => `${f.field}: ${f.problem}`).join("; "), fields };
}

export async function validBody<S extends z.ZodType>(c: Context, platform: PlatformSpeed, schema: S): Promise<z.infer<S>> {
  const r = schema.safeParse(await jsonValue(c, platform, ADMIN_BODY_LIMIT));
  if (!r.success) {
    const { message, fields } = describe(r.error);
    throw new GatewayError(400, "invalid_body", message, { fields });
  }
  return r.data;
}

export function validQuery<S extends z.ZodType>(c: Context, schema: S): z.infer<S> {
  const r = schema.safeParse(c.req.query());
  if (!r.success) {
    const { message, fields } = describe(r.error);
    throw new GatewayError(400, "invalid_query", message, { fields });
  }
  return r.data;
}
