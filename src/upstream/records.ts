// Reading the upstream's records: lenient zod schemas (unknown fields pass through untouched, the gateway forwards what it
// does not rewrite), parsed on the control plane only; the runtime plane streams bodies and never parses them.
import * as z from "zod";

/** A field read leniently: typed when the upstream sent that type; absent, or read as undefined, when it did not. */
export const lenient = <T extends z.ZodType>(type: T) => type.optional().catch(undefined);

/** A JSON object of which the gateway reads nothing, forwarded as it came. */
export const WireRecord = z.record(z.string(), z.unknown());
export type WireRecord = z.infer<typeof WireRecord>;

/**
 * `value` typed by its schema. Never throws for an object: a field of the wrong type reads as undefined, and every field
 * the schema does not name is kept. Something that is no object at all reads as an empty record.
 */
export function readWire<S extends z.ZodType<object>>(schema: S, value: unknown): z.output<S> {
  const r = schema.safeParse(value && typeof value === "object" && !Array.isArray(value) ? value : {});
  return r.success ? r.data : (schema.parse({}) as z.output<S>);
}

/** The items of a list answer: the array field `name`, top level or (unless topLevelOnly) under `data`. */
export function listItems<S extends z.ZodType<object>>(
  schema: S,
  body: WireRecord,
  name: string,
  opts: { topLevelOnly?: boolean } = {},
): z.output<S>[] {
  const data = !opts.topLevelOnly && body.data && typeof body.data === "object" ? (body.data as WireRecord) : {};
  const raw = Array.isArray(body[name]) ? body[name] : Array.isArray(data[name]) ? data[name] : [];
  return (raw as unknown[]).map((item) => readWire(schema, item));
}

/**
 * An upstream answer's text as JSON, tolerating the bare `NaN`, `Infinity` and `-Infinity` some JSON writers emit
 * (Python's, by default): each is read as the string of its name, so a reader sees a value it will refuse rather
 * than an unreadable answer. @throws SyntaxError for anything else that is not JSON.
 */
export function parseUpstreamJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    if (!/NaN|Infinity/.test(text)) throw err;
    return JSON.parse(quoteNonFinite(text));
  }
}

/** `text` with every bare NaN / Infinity / -Infinity outside a string quoted. */
function quoteNonFinite(text: string): string {
  let out = "";
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (inString) {
      out += ch;
      if (ch === "\\") out += text[++i] ?? "";
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    const word = ["NaN", "Infinity", "-Infinity"].find((w) => text.startsWith(w, i));
    if (word) {
      out += `"${word}"`;
      i += word.length - 1;
    } else out += ch;
  }
  return out;
}
