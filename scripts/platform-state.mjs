// No module-level mutable state in src/{host,web,upstream}/ (issue 41): two gateways in one process must not share a setting, so
// what the runtime's entry chooses (a reader, a writer, a fast path) is handed to each gateway, never stored in a
// module. dependency-cruiser sees imports, not state: this reads every src/{host,web,upstream}/**/*.ts (tests and declarations
// aside) with oxc-parser and refuses
//   - a top-level `let` or `var` (a binding a setter or the module itself reassigns), and
//   - a property assigned on a module-level binding (an exported or private object used as a setter's store).
// Caches keyed by the request (WeakMaps, a symbol on the object) are not settings and are not refused.
// Run: `npm run lint:state` (part of `npm run lint`); `node scripts/platform-state.mjs [root]` checks another tree.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { parseSync, Visitor } from "oxc-parser";

/**
 * Process-wide by nature, so allowed by name (file → binding → why). Nothing a gateway chooses belongs here.
 */
const ALLOWED = {
  "src/host/worker.ts": {
    cached: "the isolate's one gateway, built on its first request from the Worker's env (Workers give no other place)",
  },
  "src/host/node/turn-writes.ts": { turn: "the event loop's current turn: one per process" },
  "src/host/node/log-sink.ts": { stdout: "fd 1: one per process" },
  "src/host/node/direct-relay.ts": { tags: "a counter of relay tags, unique in the process" },
};

/** The problems in one file's source (file: its path from the root, for messages and ALLOWED). */
function platformStateProblems(file, source) {
  const allowed = ALLOWED[file] ?? {};
  const problems = [];
  const { program, errors } = parseSync(file, source);
  if (errors.length) return [`${file}: does not parse (${errors[0].message})`];
  const topLevel = new Set();
  const line = (offset) => source.slice(0, offset).split("\n").length;
  for (const stmt of program.body) {
    const decl = stmt.type === "ExportNamedDeclaration" ? stmt.declaration : stmt;
    if (decl?.type !== "VariableDeclaration") continue;
    for (const d of decl.declarations) {
      if (d.id.type !== "Identifier") continue;
      topLevel.add(d.id.name);
      if (decl.kind !== "const" && !allowed[d.id.name])
        problems.push(`${file}:${line(d.start)}: top-level \`${decl.kind} ${d.id.name}\`: module-level mutable state`);
    }
  }
  const assigned = (target) => {
    let node = target;
    while (node?.type === "TSAsExpression" || node?.type === "TSNonNullExpression" || node?.type === "ParenthesizedExpression")
      node = node.expression;
    if (node?.type !== "MemberExpression" && node?.type !== "StaticMemberExpression" && node?.type !== "ComputedMemberExpression") return;
    let object = node.object;
    while (object?.type?.endsWith("MemberExpression")) object = object.object;
    if (object?.type === "Identifier" && topLevel.has(object.name) && !allowed[object.name])
      problems.push(`${file}:${line(node.start)}: a property of module-level \`${object.name}\` is assigned: module-level mutable state`);
  };
  new Visitor({
    AssignmentExpression: (n) => assigned(n.left),
    UpdateExpression: (n) => assigned(n.argument),
  }).visit(program);
  return problems;
}

function tsFiles(dir) {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => /\.tsx?$/.test(f) && !/\.test\.tsx?$/.test(f) && !f.endsWith(".d.ts"))
    .map((f) => join(dir, f));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = process.argv[2] ?? process.cwd();
  // the runtime's folders (src/platform/ before they were split: kept so a tree of that layout is still read)
  const dirs = ["host", "web", "upstream", "platform"].map((d) => join(root, "src", d)).filter((d) => existsSync(d));
  const problems = dirs
    .flatMap(tsFiles)
    .flatMap((f) => platformStateProblems(relative(root, f).split(sep).join("/"), readFileSync(f, "utf8")));
  for (const p of problems) console.error(p);
  if (problems.length) {
    console.error(`\n${problems.length} module-level mutable state problem(s) in src/{host,web,upstream}/ (scripts/platform-state.mjs)`);
    process.exit(1);
  }
  console.log("src/{host,web,upstream}/: no module-level mutable state");
}
