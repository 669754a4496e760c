// Reads and validates an admin request with zod; every problem is named by its field in one 400 `{message, code}`.
import type { Context } from "hono";
import type { z } from "zod";
import { GatewayError } from "../../errors.js";
import { JSON_MAX_DEPTH, jsonDepth, readBoundedText } from "../../routing/body.js";

/** A whole tenant (settings, quotas, alert rules) fits in a few kilobytes; this is generous. */
export const ADMIN_BODY_LIMIT = 256 * 1024;

function describe(error: z.ZodError): { message: string; fields: Array<{ field: string; problem: string }> } {
  const fields = error.issues.map((i) => ({ field: i.path.map(String).join(".") || "(body)", problem: i.message }));
  return { message: fields.map((f) => `${f.field}: ${f.problem}`).join("; "), fields };
}

export async function validBody<S extends z.ZodType>(c: Context, schema: S): Promise<z.infer<S>> {
  const text = await readBoundedText(c.req.raw, ADMIN_BODY_LIMIT);
  if (jsonDepth(text, JSON_MAX_DEPTH) > JSON_MAX_DEPTH) {
    throw new GatewayError(400, "invalid_json", `The request body nests deeper than ${JSON_MAX_DEPTH} levels.`, { maxDepth: JSON_MAX_DEPTH });
  }
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : {};
  } catch {
    throw new GatewayError(400, "invalid_json", "The request body is not valid JSON.");
  }
  const r = schema.safeParse(json);
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
