// How a route-table row declares its body: a strict zod schema (what is not declared is refused), in which every field
// that names a resource is marked with its kind, wherever it sits. One declaration does three jobs: it refuses what is
// not declared, it finds the ids a body names (so the chain can check they are the caller's), and it documents the row.
import * as z from "zod";
import type { ResourceKind } from "../../state/types.js";
import { canonicalEgressRule } from "../../web/egress-rules.js";

/** The kinds a body field may name. Snapshots cover sandbox and session snapshots. */
export type RefKind = Extract<ResourceKind, "volume" | "profile" | "extension" | "snapshot" | "session" | "sandbox" | "job" | "task">;

/** Marks schemas whose value is an id of a resource of some kind. */
const references = z.registry<{ ref: RefKind }>();

/** A field whose value is the id of a resource of `kind`: before forwarding, it must be the caller's. */
export function owned(kind: RefKind): z.ZodString {
  const schema = z.string().min(1).max(256);
  references.add(schema, { ref: kind });
  return schema;
}

/** Marks schemas whose value is an egress rule (an `allowOut` / `denyOut` entry). */
const egressMarks = z.registry<{ egress: true }>();

/**
 * A list of egress rules (addresses, CIDR ranges, host names): an entry that is not plainly one of them is refused
 * (400 invalid_params naming it), and each is forwarded in its canonical spelling (canonicalEgress, ./egress.ts).
 */
export function egressRules(): z.ZodArray<z.ZodString> {
  const rule = z
    .string()
    .max(4096)
    .refine((s) => canonicalEgressRule(s) !== undefined, {
      message: "not an address, a CIDR range (such as 203.0.113.0/24) or a host name (such as example.com or *.example.com)",
    });
  egressMarks.add(rule, { egress: true });
  return z.array(rule).max(1000);
}

/** An integer count the reservation is computed from: anything else (0, −1, 0.5, "1000") is refused, never coerced. */
export const count = (min: number, max: number) => z.number().int().min(min).max(max);

/** A value the gateway forwards as data and never reads (a JSON schema, an output model, an agent's initial actions). */
export const opaque = () => z.unknown().optional();

/** A JSON object of the row's declared fields, and no others. */
export const fields = z.strictObject;

/**
 * A JSON object of optional fields, and no others. Each may also be null: the Python SDK's models can send an unset
 * field as null, and the upstream reads null as absent.
 */
export function options(shape: Record<string, z.ZodType>): z.ZodObject {
  return z.strictObject(Object.fromEntries(Object.entries(shape).map(([k, s]) => [k, s.nullish()])));
}

/** How a row's request body is declared. */
export type BodySpec =
  /** No body is read; whatever comes is dropped by the upstream (GET, DELETE, stop). */
  | { kind: "none" }
  /** A JSON object checked against `schema` before anything is forwarded. */
  | { kind: "json"; schema: z.ZodType }
  /** A multipart upload (a file and a few text fields): streamed, names no resource. */
  | { kind: "multipart"; fields: readonly string[] }
  /** The sandbox runtime plane: the body goes to the sandbox the caller's token is bound to and names nothing else. */
  | { kind: "sandbox" }
  /** Bytes streamed as they come (an upload to a presigned ticket). */
  | { kind: "bytes" }
  /** An own row's body, read by its handler and checked there once (with `schema` when it is the admin API's). */
  | { kind: "handler"; what: string; schema?: z.ZodType };

export const json = (schema: z.ZodType): BodySpec => ({ kind: "json", schema });

/** A resource a body names: where (`path`, e.g. `mounts./mnt/x.id`) and what. */
export interface NamedRef {
  path: string;
  kind: RefKind;
  id: string;
}

/** Reads through wrappers that do not change what a value is (optional, nullable, default, readonly…). */
function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema;
  for (;;) {
    const def = s.def as { type: string; innerType?: z.ZodType; in?: z.ZodType };
    if ((def.type === "optional" || def.type === "nullable" || def.type === "default" || def.type === "readonly") && def.innerType)
      s = def.innerType;
    else if (def.type === "pipe" && def.in) s = def.in;
    else return s;
  }
}

const join = (path: string, key: string | number) => (path ? `${path}.${key}` : String(key));

/** What a schema holds, read through its wrappers: its kind and the schemas below it. */
interface Structure {
  type: string;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  valueType?: z.ZodType;
  options?: z.ZodType[];
  left?: z.ZodType;
  right?: z.ZodType;
}
const structure = (schema: z.ZodType): Structure => unwrap(schema).def as Structure;

/**
 * What `schema` can hold: the kind it names when it is a reference, `true` when a reference sits somewhere below it,
 * `false` when none can (a body's walk stops there). Read once per schema: schemas do not change once declared, and
 * zod's registry lookup (which merges a schema's parents' entries) is the costly part of a walk.
 */
const refsMemo = new WeakMap<z.ZodType, RefKind | boolean>();
function refsUnder(schema: z.ZodType, depth = 0): RefKind | boolean {
  const known = refsMemo.get(schema);
  if (known !== undefined) return known;
  // Deeper than any declaration goes: walked, as if a reference could sit below (never a missed one).
  if (depth > 64) return true;
  const mark = references.get(schema) ?? references.get(unwrap(schema));
  let at: RefKind | boolean = mark ? mark.ref : false;
  if (!mark) {
    const def = structure(schema);
    const below = [
      ...Object.values(def.shape ?? {}),
      ...[def.element, def.valueType, def.left, def.right].filter((s) => s !== undefined),
      ...(def.options ?? []),
    ];
    at = below.some((s) => refsUnder(s, depth + 1) !== false);
  }
  refsMemo.set(schema, at);
  return at;
}

/**
 * Every resource id `value` names under `schema`, found by walking both together (objects, arrays, records, unions).
 * Walks the raw value, so it works on a body that failed other checks (an unknown field forwarded by the operator's
 * switch still leaves the declared fields checked).
 */
export function namedRefs(schema: z.ZodType, value: unknown, path = "", out: NamedRef[] = []): NamedRef[] {
  const at = refsUnder(schema);
  if (at === false) return out;
  if (at !== true) {
    if (typeof value === "string") out.push({ path, kind: at, id: value });
    return out;
  }
  if (value === undefined || value === null) return out;
  const def = structure(schema);
  const isObject = typeof value === "object" && !Array.isArray(value);
  if (def.type === "object" && def.shape && isObject) {
    for (const [key, field] of Object.entries(def.shape)) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) namedRefs(field, v, join(path, key), out);
    }
  } else if (def.type === "array" && def.element && Array.isArray(value)) {
    for (const [i, v] of value.entries()) namedRefs(def.element, v, join(path, i), out);
  } else if (def.type === "record" && def.valueType && isObject) {
    for (const [key, v] of Object.entries(value as Record<string, unknown>)) namedRefs(def.valueType, v, join(path, key), out);
  } else if (def.type === "union" && def.options) {
    // The option the value is (the first that accepts it), else every option that could hold a reference.
    const match = def.options.find((o) => o.safeParse(value).success);
    for (const o of match ? [match] : def.options) namedRefs(o, value, path, out);
  } else if (def.type === "intersection" && def.left && def.right) {
    namedRefs(def.left, value, path, out);
    namedRefs(def.right, value, path, out);
  }
  return out;
}

/** Whether an egress rule can sit at or below `schema` (memoised per schema, as refsUnder). */
const egressMemo = new WeakMap<z.ZodType, "rule" | boolean>();
function egressUnder(schema: z.ZodType, depth = 0): "rule" | boolean {
  const known = egressMemo.get(schema);
  if (known !== undefined) return known;
  if (depth > 64) return true;
  let at: "rule" | boolean = egressMarks.has(schema) || egressMarks.has(unwrap(schema)) ? "rule" : false;
  if (!at) {
    const def = structure(schema);
    const below = [
      ...Object.values(def.shape ?? {}),
      ...[def.element, def.valueType, def.left, def.right].filter((s) => s !== undefined),
      ...(def.options ?? []),
    ];
    at = below.some((s) => egressUnder(s, depth + 1) !== false);
  }
  egressMemo.set(schema, at);
  return at;
}

/** Whether a body under `schema` can hold egress rules at all (a row without any never walks its bodies for them). */
export const declaresEgress = (schema: z.ZodType): boolean => egressUnder(schema) !== false;

/**
 * Rewrites, in place, every egress rule `value` holds under `schema` into its canonical spelling (a rule with none is
 * left as it is: the declaration refuses it). Returns whether anything changed, so the body is re-serialised only then.
 */
export function canonicalEgress(schema: z.ZodType, value: unknown): boolean {
  if (value === undefined || value === null || typeof value !== "object" || egressUnder(schema) === false) return false;
  const def = structure(schema);
  let changed = false;
  if (def.type === "object" && def.shape && !Array.isArray(value)) {
    for (const [key, field] of Object.entries(def.shape)) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined && canonicalEgress(field, v)) changed = true;
    }
  } else if (def.type === "array" && def.element && Array.isArray(value)) {
    const ruleHere = egressUnder(def.element) === "rule";
    for (const [i, v] of value.entries()) {
      if (ruleHere && typeof v === "string") {
        const canon = canonicalEgressRule(v);
        if (canon !== undefined && canon !== v) {
          value[i] = canon;
          changed = true;
        }
      } else if (canonicalEgress(def.element, v)) changed = true;
    }
  } else if (def.type === "record" && def.valueType && !Array.isArray(value)) {
    for (const v of Object.values(value as Record<string, unknown>)) if (canonicalEgress(def.valueType, v)) changed = true;
  } else if (def.type === "union" && def.options) {
    const match = def.options.find((o) => o.safeParse(value).success);
    if (match && canonicalEgress(match, value)) changed = true;
  } else if (def.type === "intersection" && def.left && def.right) {
    if (canonicalEgress(def.left, value)) changed = true;
    if (canonicalEgress(def.right, value)) changed = true;
  }
  return changed;
}

/**
 * Every field path `schema` declares, with the schema there: objects by key, arrays as `[]`, records as `.*`, each
 * union option at the same path. A field that names a resource is a leaf.
 */
function* declared(schema: z.ZodType, path = "", depth = 0): Generator<{ path: string; schema: z.ZodType }> {
  if (depth > 12) return;
  if (path) yield { path, schema };
  if (references.has(schema) || references.has(unwrap(schema))) return;
  const def = structure(schema);
  if (def.type === "object" && def.shape) for (const [k, f] of Object.entries(def.shape)) yield* declared(f, join(path, k), depth + 1);
  else if (def.type === "array" && def.element) yield* declared(def.element, `${path}[]`, depth + 1);
  else if (def.type === "record" && def.valueType) yield* declared(def.valueType, `${path}.*`, depth + 1);
  else if (def.type === "union" && def.options) for (const o of def.options) yield* declared(o, path, depth + 1);
}

/** Every field path under `schema` that names a resource, with its kind (`tollgate routes`, docs/routes.md). */
export function referenceFields(schema: z.ZodType): Array<{ path: string; kind: RefKind }> {
  const out = new Map<string, RefKind>();
  for (const d of declared(schema)) {
    const mark = references.get(d.schema) ?? references.get(unwrap(d.schema));
    if (mark && !out.has(d.path)) out.set(d.path, mark.ref);
  }
  return [...out].map(([path, kind]) => ({ path, kind }));
}

/**
 * Every field path `schema` declares, with what it holds there (`object`, `array`, `record`, `string`… and `unknown` for
 * an opaque value whose insides are data). Arrays add `[]` to the path, records `.*`. For the SDK-walk test.
 */
export function declaredPaths(schema: z.ZodType): Map<string, string> {
  const out = new Map<string, string>();
  for (const d of declared(schema)) {
    const type = structure(d.schema).type;
    if (!out.has(d.path) || out.get(d.path) === "union") out.set(d.path, type);
  }
  return out;
}

/** One thing wrong with a body, in the gateway's words. */
export interface BodyProblem {
  code: "unknown_field" | "invalid_params";
  field: string;
  message: string;
}

const fieldName = (path: PropertyKey[]) => path.map(String).join(".");

/** What is wrong with `value` under `schema`, unknown fields first (each named by its full path). */
export function bodyProblems(schema: z.ZodType, value: unknown): BodyProblem[] {
  const parsed = schema.safeParse(value);
  if (parsed.success) return [];
  const problems: BodyProblem[] = [];
  for (const issue of parsed.error.issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        const field = fieldName([...issue.path, key]);
        problems.push({ code: "unknown_field", field, message: `${field} is not a field this route accepts.` });
      }
    } else if (issue.code === "invalid_union") {
      // A union's own issues say which option came closest; the field is what a client needs.
      const field = fieldName(issue.path);
      problems.push({ code: "invalid_params", field, message: `${field || "The body"} is not one of the accepted shapes.` });
    } else {
      const field = fieldName(issue.path);
      problems.push({ code: "invalid_params", field, message: `${field || "The body"}: ${issue.message}` });
    }
  }
  return problems.sort((a, b) => (a.code === b.code ? 0 : a.code === "unknown_field" ? -1 : 1));
}
