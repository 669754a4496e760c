// Reads the official SDK's parameter types (node_modules/@hyperbrowser/sdk/dist/types/**/*.d.ts) and lists every field
// path a type declares, the way the body declarations (src/routing/bodies/) name them: `a.b`, `list[]`, `map.*`.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseSync } from "oxc-parser";

const TYPES = join(process.cwd(), "node_modules/@hyperbrowser/sdk/dist/types");

type Node = any;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : e.name.endsWith(".d.ts") ? [join(dir, e.name)] : [],
  );
}

/** Every interface and type alias the SDK's type files declare, by name. */
function declarations(): Map<string, Node> {
  const found = new Map<string, Node>();
  for (const file of filesUnder(TYPES)) {
    const { program } = parseSync(file, readFileSync(file, "utf8"));
    for (const stmt of program.body) {
      const decl = stmt.type === "ExportNamedDeclaration" ? stmt.declaration : stmt;
      if (decl?.type === "TSInterfaceDeclaration" || decl?.type === "TSTypeAliasDeclaration") found.set(decl.id.name, decl);
    }
  }
  return found;
}

let cache: Map<string, Node> | undefined;

/** The field paths of the SDK type `name`; fields typed `never` (not sent) are left out. */
export function sdkFieldPaths(name: string): Set<string> {
  cache ??= declarations();
  const decls = cache;
  const out = new Set<string>();
  const join = (p: string, k: string) => (p ? `${p}.${k}` : k);

  function members(body: Node[], prefix: string, depth: number) {
    for (const m of body) {
      if (m.type !== "TSPropertySignature" || m.key?.type !== "Identifier") continue;
      const t = m.typeAnnotation?.typeAnnotation;
      if (t?.type === "TSNeverKeyword") continue;
      const path = join(prefix, m.key.name);
      out.add(path);
      walk(t, path, depth + 1);
    }
  }

  function walk(t: Node, prefix: string, depth: number) {
    if (!t || depth > 12) return;
    switch (t.type) {
      case "TSArrayType":
        out.add(`${prefix}[]`);
        return walk(t.elementType, `${prefix}[]`, depth + 1);
      case "TSTypeLiteral":
        return members(t.members, prefix, depth);
      case "TSUnionType":
      case "TSIntersectionType":
        for (const x of t.types) walk(x, prefix, depth);
        return;
      case "TSParenthesizedType":
        return walk(t.typeAnnotation, prefix, depth);
      case "TSTypeReference": {
        const name = t.typeName?.name as string | undefined;
        const args: Node[] = t.typeArguments?.params ?? [];
        if (name === "Array") {
          out.add(`${prefix}[]`);
          return walk(args[0], `${prefix}[]`, depth + 1);
        }
        if (name === "Record") {
          out.add(`${prefix}.*`);
          return walk(args[1], `${prefix}.*`, depth + 1);
        }
        const decl = name ? decls.get(name) : undefined;
        if (!decl) return; // a type from elsewhere (zod's ZodSchema): opaque here
        if (decl.type === "TSTypeAliasDeclaration") return walk(decl.typeAnnotation, prefix, depth);
        for (const h of decl.extends ?? []) walk({ type: "TSTypeReference", typeName: h.expression }, prefix, depth);
        return members(decl.body.body, prefix, depth);
      }
      default:
        return;
    }
  }

  walk({ type: "TSTypeReference", typeName: { name } }, "", 0);
  return out;
}
