// The deterministic extractor: fills a JSON schema from pages' facts, tables, lists and headings (no language model).
import type { PageStructure } from "./page-structure.js";

type Schema = Record<string, any>;

/** `publishedAt` → `published at`, `In-stock` → `in stock`: how a schema key and a label on a page are compared. */
export const words = (s: string) =>
  s
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, " ")
    .trim();

const ALIASES: Record<string, string[]> = {
  title: ["title", "name", "heading", "headline", "og:title"],
  description: ["description", "summary", "abstract", "overview", "intro", "excerpt"],
  url: ["url", "link", "source", "source url", "page url", "href"],
  date: ["date", "published", "published at", "publication date", "published date"],
};

function aliasGroup(key: string): string | undefined {
  const k = words(key);
  return Object.keys(ALIASES).find((g) => ALIASES[g].includes(k));
}

/** A label matches a key when their words are equal, or all the key's words appear in the label. */
function labelMatches(label: string, key: string): boolean {
  const l = words(label);
  const k = words(key);
  if (!k) return false;
  if (l === k || l === k.replace(/s$/, "")) return true;
  const lw = new Set(l.split(" "));
  return k.split(" ").every((w) => lw.has(w) || lw.has(w.replace(/s$/, "")));
}

function resolve(schema: Schema | undefined, root: Schema): Schema {
  let s = schema ?? {};
  for (let i = 0; i < 10 && typeof s.$ref === "string"; i++) {
    const path = s.$ref.replace(/^#\//, "").split("/");
    s = path.reduce((acc: any, p: string) => acc?.[p], root) ?? {};
  }
  const branch = s.anyOf ?? s.oneOf;
  if (Array.isArray(branch)) return resolve(branch.find((b: Schema) => b.type !== "null") ?? branch[0], root);
  return s;
}

const typeOf = (s: Schema): string =>
  Array.isArray(s.type)
    ? (s.type.find((t: string) => t !== "null") ?? "string")
    : (s.type ?? (s.properties ? "object" : s.items ? "array" : "string"));

/** Turns found text into the schema's type; undefined when it cannot. */
function coerce(value: string | undefined, s: Schema, context: string): unknown {
  if (Array.isArray(s.enum)) {
    const hay = words(value ?? context);
    return s.enum.find((e: unknown) => hay.includes(words(String(e)))) ?? undefined;
  }
  if (value === undefined) return undefined;
  switch (typeOf(s)) {
    case "number":
    case "integer": {
      const m = /-?\d[\d,]*(\.\d+)?/.exec(value);
      if (!m) return undefined;
      const n = Number(m[0].replace(/,/g, ""));
      return typeOf(s) === "integer" ? Math.round(n) : n;
    }
    case "boolean":
      if (/^(yes|true|in stock|available|y)\b/i.test(value.trim())) return true;
      if (/^(no|false|out of stock|unavailable|n)\b/i.test(value.trim())) return false;
      return undefined;
    default:
      return value;
  }
}

/** One value for `key` from one page, by the rules in the README: a fact labelled exactly so, then the key's alias
 * (title, description, url, date), then a fact whose label contains the key's words, then a sentence naming it. */
function primitiveFor(doc: PageStructure, key: string): string | undefined {
  const exact = doc.facts.find(([label]) => words(label) === words(key))?.[1];
  if (exact) return exact;
  const alias = aliasValue(doc, key);
  if (alias) return alias;
  const fact = doc.facts.find(([label]) => labelMatches(label, key))?.[1];
  if (fact) return fact;
  const k = words(key);
  if (k === "email") return /[\w.+-]+@[\w-]+(\.[\w-]+)+/.exec(doc.paragraphs.join(" "))?.[0];
  return doc.paragraphs.flatMap((p) => p.split(/(?<=[.!?])\s+/)).find((s) => k.split(" ").every((w) => words(s).split(" ").includes(w)));
}

function aliasValue(doc: PageStructure, key: string): string | undefined {
  switch (aliasGroup(key)) {
    case "title":
      return doc.headings[0] ?? doc.title;
    case "description":
      return doc.description ?? doc.paragraphs[0];
    case "url":
      return doc.url;
    case "date":
      return doc.facts.find(([l]) => /published|date|updated/i.test(l))?.[1];
  }
  return undefined;
}

function fillObject(s: Schema, docs: PageStructure[], root: Schema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, sub] of Object.entries<Schema>(s.properties ?? {})) out[key] = fillValue(resolve(sub, root), key, docs, root);
  return out;
}

function rowObjects(items: Schema, docs: PageStructure[], root: Schema): Record<string, unknown>[] | undefined {
  const props = Object.entries<Schema>(items.properties ?? {});
  for (const doc of docs) {
    for (const table of doc.tables) {
      const cols = props.map(([k]) => table.headers.findIndex((h) => labelMatches(h, k) || labelMatches(k, h)));
      if (!cols.some((c) => c >= 0)) continue;
      return table.rows.map((row) =>
        Object.fromEntries(
          props.map(([k, sub], i) => [k, cols[i] >= 0 ? (coerce(row[cols[i]], resolve(sub, root), row.join(" ")) ?? null) : null]),
        ),
      );
    }
  }
  return undefined;
}

function fillArray(s: Schema, key: string, docs: PageStructure[], root: Schema): unknown[] {
  const items = resolve(s.items, root);
  const limit = typeof s.maxItems === "number" ? s.maxItems : 100;
  if (typeOf(items) === "object") {
    const rows = rowObjects(items, docs, root);
    if (rows) return rows.slice(0, limit);
    return docs.map((d) => fillObject(items, [d], root)).slice(0, limit);
  }
  const k = words(key);
  let found: string[] = [];
  if (/^(links|urls|hrefs)$/.test(k)) found = docs.flatMap((d) => d.links);
  else if (/^(headings|sections)$/.test(k)) found = docs.flatMap((d) => d.headings);
  else if (/^(paragraphs)$/.test(k)) found = docs.flatMap((d) => d.paragraphs);
  else if (/^(titles|names|pages)$/.test(k) && docs.length > 1) found = docs.map((d) => d.headings[0] ?? d.title);
  else {
    const list = docs.flatMap((d) => d.lists).find((l) => l.heading && (labelMatches(l.heading, key) || labelMatches(key, l.heading)));
    const column = docs
      .flatMap((d) => d.tables)
      .map((t) => ({ t, i: t.headers.findIndex((h) => labelMatches(key.replace(/s$/, ""), h) || labelMatches(h, key)) }))
      .find((x) => x.i >= 0);
    found = list?.items ?? column?.t.rows.map((r) => r[column.i]) ?? docs.flatMap((d) => d.lists.flatMap((l) => l.items));
  }
  return found
    .map((v) => coerce(v, items, v))
    .filter((v) => v !== undefined)
    .slice(0, limit);
}

function fillValue(s: Schema, key: string, docs: PageStructure[], root: Schema): unknown {
  switch (typeOf(s)) {
    case "object":
      return fillObject(s, docs, root);
    case "array":
      return fillArray(s, key, docs, root);
    default:
      for (const doc of docs) {
        const v = coerce(primitiveFor(doc, key), s, doc.paragraphs.join(" "));
        if (v !== undefined) return v;
      }
      return null;
  }
}

/** Fills `schema` from `docs` (the pages, in order: earlier pages win for single values). */
export function extractWithSchema(schema: Schema, docs: PageStructure[]): unknown {
  const root = resolve(schema, schema);
  return fillValue(root, "", docs, schema);
}

/** Without a schema: what the pages are, in a fixed shape (titles, descriptions, headings and facts). */
export function extractWithoutSchema(docs: PageStructure[]): Record<string, unknown> {
  return {
    pages: docs.map((d) => ({
      url: d.url,
      title: d.headings[0] ?? d.title,
      description: d.description ?? d.paragraphs[0] ?? null,
      headings: d.headings,
      facts: Object.fromEntries(d.facts.filter(([k]) => !/^(og:|description$|viewport$)/.test(k))),
    })),
  };
}
