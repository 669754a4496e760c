// What each official SDK declares on the wire, read from its own source, and the drift between two readings.
// Node: every interface and type alias of @hyperbrowser/sdk's dist/types (walked with oxc-parser). Python: every
// pydantic model of hyperbrowser/models (read by test/python/sdk_models.py with Python's `ast`; nothing is imported).
// A model's declaration is one line per wire field path — `path: type`, `path?: type` when it may be absent — so a
// new field, a removed one, or one whose type or optionality changed shows up by name (docs/sdk-drift.md).
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseSync } from "oxc-parser";

/** Model (or type) name → its wire fields, `path: type` / `path?: type`, in declaration order. */
export type Declarations = Record<string, string[]>;

export interface SdkReading {
  version: string;
  models: Declarations;
}

const PY_READER = join(process.cwd(), "test/python/sdk_models.py");

/** The Python SDK at `sdkDir` (the directory holding `hyperbrowser/` and `pyproject.toml`). */
export function readPythonSdk(sdkDir: string): SdkReading {
  const out = execFileSync("python3", [PY_READER, join(sdkDir, "hyperbrowser/models")], { maxBuffer: 64 * 1024 * 1024 }).toString();
  const raw = JSON.parse(out) as Record<string, Array<{ path: string; required: boolean; type: string }>>;
  const models: Declarations = {};
  for (const [name, fields] of Object.entries(raw)) models[name] = fields.map((f) => `${f.path}${f.required ? "" : "?"}: ${f.type}`);
  const version = /^version\s*=\s*"([^"]+)"/m.exec(readFileSync(join(sdkDir, "pyproject.toml"), "utf8"))?.[1] ?? "unknown";
  return { version, models };
}

type Node = any;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : e.name.endsWith(".d.ts") ? [join(dir, e.name)] : [],
  );
}

/** The Node SDK whose package root is `pkgDir` (its `dist/types/**\/*.d.ts` and package.json). */
export function readNodeSdk(pkgDir: string): SdkReading {
  const decls = new Map<string, Node>();
  for (const file of filesUnder(join(pkgDir, "dist/types"))) {
    const { program } = parseSync(file, readFileSync(file, "utf8"));
    for (const stmt of program.body) {
      const decl = stmt.type === "ExportNamedDeclaration" ? stmt.declaration : stmt;
      if (decl?.type === "TSInterfaceDeclaration" || decl?.type === "TSTypeAliasDeclaration") decls.set(decl.id.name, decl);
    }
  }
  const models: Declarations = {};
  for (const name of [...decls.keys()].sort()) {
    const lines = nodeFields(decls, name);
    if (lines.length > 0) models[name] = lines;
  }
  const version = (JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")) as { version: string }).version;
  return { version, models };
}

/** A type's tag: str, number, bool, enum(a|b), array, record, a declared name, with `|null` when null is allowed. */
function nodeTag(decls: Map<string, Node>, t: Node, depth = 0): string {
  if (!t || depth > 8) return "any";
  switch (t.type) {
    case "TSStringKeyword":
      return "str";
    case "TSNumberKeyword":
      return "number";
    case "TSBooleanKeyword":
      return "bool";
    case "TSNullKeyword":
      return "null";
    case "TSAnyKeyword":
    case "TSUnknownKeyword":
      return "any";
    case "TSArrayType":
      return "array";
    case "TSTypeLiteral":
      return "object";
    case "TSParenthesizedType":
      return nodeTag(decls, t.typeAnnotation, depth + 1);
    case "TSLiteralType":
      return `enum(${String(t.literal?.value)})`;
    case "TSUnionType": {
      const parts = t.types.map((x: Node) => nodeTag(decls, x, depth + 1)) as string[];
      const nullable = parts.includes("null") || parts.includes("undefined");
      const rest = parts.filter((p) => p !== "null" && p !== "undefined");
      const literals = rest.filter((p) => p.startsWith("enum("));
      const tags = [
        ...(literals.length > 0
          ? [
              `enum(${literals
                .map((l) => l.slice(5, -1))
                .flatMap((l) => l.split("|"))
                .sort()
                .join("|")})`,
            ]
          : []),
        ...[...new Set(rest.filter((p) => !p.startsWith("enum(")))].sort(),
      ];
      return tags.join("|") + (nullable ? "|null" : "");
    }
    case "TSTypeReference": {
      const name = t.typeName?.name as string | undefined;
      if (name === "Array") return "array";
      if (name === "Record") return "record";
      return name ?? "any";
    }
    case "TSUndefinedKeyword":
      return "undefined";
    default:
      return "any";
  }
}

function nodeFields(decls: Map<string, Node>, name: string): string[] {
  const out: string[] = [];
  const join = (p: string, k: string) => (p ? `${p}.${k}` : k);

  function members(body: Node[], prefix: string, depth: number, stack: string[]) {
    for (const m of body) {
      if (m.type !== "TSPropertySignature" || (m.key?.type !== "Identifier" && m.key?.type !== "Literal")) continue;
      const t = m.typeAnnotation?.typeAnnotation;
      if (t?.type === "TSNeverKeyword") continue;
      const path = join(prefix, String(m.key.name ?? m.key.value));
      out.push(`${path}${m.optional ? "?" : ""}: ${nodeTag(decls, t)}`);
      walk(t, path, depth + 1, stack);
    }
  }

  function walk(t: Node, prefix: string, depth: number, stack: string[]) {
    if (!t || depth > 12) return;
    switch (t.type) {
      case "TSArrayType":
        out.push(`${prefix}[]: ${nodeTag(decls, t.elementType)}`);
        return walk(t.elementType, `${prefix}[]`, depth + 1, stack);
      case "TSTypeLiteral":
        return members(t.members, prefix, depth, stack);
      case "TSUnionType":
      case "TSIntersectionType":
        for (const x of t.types) walk(x, prefix, depth, stack);
        return;
      case "TSParenthesizedType":
        return walk(t.typeAnnotation, prefix, depth, stack);
      case "TSTypeReference": {
        const ref = t.typeName?.name as string | undefined;
        const args: Node[] = t.typeArguments?.params ?? [];
        if (ref === "Array") {
          out.push(`${prefix}[]: ${nodeTag(decls, args[0])}`);
          return walk(args[0], `${prefix}[]`, depth + 1, stack);
        }
        if (ref === "Record") {
          out.push(`${prefix}.*: ${nodeTag(decls, args[1])}`);
          return walk(args[1], `${prefix}.*`, depth + 1, stack);
        }
        const decl = ref ? decls.get(ref) : undefined;
        if (!decl || stack.includes(ref!)) return;
        const next = [...stack, ref!];
        if (decl.type === "TSTypeAliasDeclaration") return walk(decl.typeAnnotation, prefix, depth, next);
        for (const h of decl.extends ?? []) walk({ type: "TSTypeReference", typeName: h.expression }, prefix, depth, next);
        return members(decl.body.body, prefix, depth, next);
      }
      default:
        return;
    }
  }

  walk({ type: "TSTypeReference", typeName: { name } }, "", 0, []);
  // A field reached twice (an interface extending another that declares it too) is one field, its last reading.
  const byPath = new Map<string, string>();
  for (const line of out) byPath.set(line.slice(0, line.indexOf(":")).replace(/\?$/, ""), line);
  return [...byPath.values()];
}

const pathOf = (line: string) => line.slice(0, line.indexOf(":")).replace(/\?$/, "");

/**
 * What differs between a recorded reading (`locked`) and the SDK as it is now (`current`), one sentence per change,
 * each naming the SDK, the model and the field: `python CreateSandboxImageBuildParams: new field plantedField?: str|null`.
 */
export function drift(sdk: string, locked: Declarations, current: Declarations): string[] {
  const out: string[] = [];
  for (const name of Object.keys(current).sort()) {
    const was = locked[name];
    if (!was) {
      out.push(`${sdk} ${name}: new model (${current[name]!.length} fields)`);
      continue;
    }
    const before = new Map(was.map((l) => [pathOf(l), l]));
    const now = new Map(current[name]!.map((l) => [pathOf(l), l]));
    for (const [p, l] of now) {
      const old = before.get(p);
      if (old === undefined) out.push(`${sdk} ${name}: new field ${l}`);
      else if (old !== l) out.push(`${sdk} ${name}: field changed ${old} → ${l}`);
    }
    for (const [p, l] of before) if (!now.has(p)) out.push(`${sdk} ${name}: field removed ${l}`);
  }
  for (const name of Object.keys(locked).sort()) if (!current[name]) out.push(`${sdk} ${name}: model removed`);
  return out;
}

/** The wire field paths of one model, without types: what a row's body must declare. */
export const fieldPaths = (decls: Declarations, model: string): string[] => (decls[model] ?? []).map(pathOf);
