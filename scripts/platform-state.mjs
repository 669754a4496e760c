// No hidden per-gateway state in the shipped code (issues 41, 52): two gateways in one process must not share a
// setting or a memory, so what a gateway remembers is built once by createGateway and hung on its services
// (src/services.ts: services.payments, services.custody…), and what the runtime's entry chooses is handed to each
// gateway, never stored in a module. dependency-cruiser sees imports, not state: this reads every .ts/.tsx file of
// src/ and middleware/ (tests and declarations aside) with oxc-parser and refuses
//   - a top-level `let` or `var` (a binding a setter or the module itself reassigns),
//   - a property assigned on a module-level binding (an exported or private object used as a setter's store), and
//   - a module-level collection (Map, WeakMap, Set, WeakSet, LRUCache) the module adds to: a memory of the module's
//     own. A WeakMap or WeakSet keyed by a Request, a Response or a zod schema is a memo of that object (it dies with
//     it) and is not refused; one keyed by the services or the configuration never passes, not even by name.
// A collection built once and only read (a constant set of names) is not state and is not refused.
// Run: `npm run lint:state` (part of `npm run lint`); `node scripts/platform-state.mjs [root]` checks another tree.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { parseSync, Visitor } from "oxc-parser";

/**
 * Process-wide by nature, or a pure function's memo (the same answer for every gateway), so allowed by name
 * (file → binding → why). Nothing a gateway chooses or learns belongs here.
 */
export const ALLOWED = {
  "src/host/worker.ts": {
    cached: "the isolate's one gateway, built on its first request from the Worker's env (Workers give no other place)",
  },
  "src/host/node/turn-writes.ts": { turn: "the event loop's current turn: one per process" },
  "src/host/node/log-sink.ts": { stdout: "fd 1: one per process" },
  "src/host/node/direct-relay.ts": { tags: "a counter of relay tags, unique in the process" },
  "src/host/node/pkcs11-signer.ts": { loaded: "a PKCS#11 module is initialised once per process (a second C_Initialize is refused)" },
  "src/web/request-url.ts": { goodOrigins: "a pure function's memo: whether an origin string parses as a URL" },
  "src/routing/json-body.ts": { PARSED: "a pure function's memo: texts that parse into an object" },
  "src/agent-policy/engine.ts": {
    covered: "a pure function's memo: whether one address range covers another",
    ROW_POLICIES: "a constant table, its agents' rows added at load (never after)",
  },
  "src/payments/money.ts": { shown: "a pure function's memo: an atomic amount's USD text" },
  "src/payments/amounts.ts": { tenants: "a memo keyed by a tenant's record (a value, like a schema): its amounts, parsed" },
  "src/payments/schemes/permit2.ts": { clients: "one viem client per RPC URL: a connection, holding no fact of any gateway" },
  "src/state/windows.ts": { lastDay: "a pure function's memo: the UTC day and month of the last instant asked about" },
  "src/oauth/tools.ts": { known: "the MCP tools of each scope, learned once from the code: the same for every gateway" },
};

/** Collections a module can keep a memory in. */
const COLLECTIONS = new Set(["Map", "WeakMap", "Set", "WeakSet", "LRUCache"]);
/** What adds to (or takes from) a collection. */
const MUTATORS = new Set(["set", "add", "delete", "clear"]);
/** Keys a weak memo may have: it lives as long as that object (a request, an answer, a schema). */
const MEMO_KEY = /^(Request|Response|z\.Zod\w*|Zod\w*)$/;
/** Keys that make a collection a gateway's memory kept in a module: never allowed. */
const GATEWAY_KEY = /(^|\W)(\w*Services|TollgateConfig|object)(\W|$)/;

/** The problems in one file's source (file: its path from the root, for messages and ALLOWED). */
export function moduleStateProblems(file, source, allowList = ALLOWED) {
  const allowed = allowList[file] ?? {};
  const problems = [];
  const { program, errors } = parseSync(file, source);
  if (errors.length) return [`${file}: does not parse (${errors[0].message})`];
  const topLevel = new Set();
  /** Module-level collections: name → { line, kind, key (the first type argument's text) }. */
  const collections = new Map();
  const line = (offset) => source.slice(0, offset).split("\n").length;
  for (const stmt of program.body) {
    const decl = stmt.type === "ExportNamedDeclaration" ? stmt.declaration : stmt;
    if (decl?.type !== "VariableDeclaration") continue;
    for (const d of decl.declarations) {
      if (d.id.type !== "Identifier") continue;
      topLevel.add(d.id.name);
      if (decl.kind !== "const" && !allowed[d.id.name])
        problems.push(`${file}:${line(d.start)}: top-level \`${decl.kind} ${d.id.name}\`: module-level mutable state`);
      const init = d.init;
      if (init?.type === "NewExpression" && init.callee.type === "Identifier" && COLLECTIONS.has(init.callee.name)) {
        const arg = (init.typeArguments ?? init.typeParameters)?.params?.[0];
        const declared = d.id.typeAnnotation?.typeAnnotation?.typeArguments?.params?.[0];
        const keyNode = arg ?? declared;
        collections.set(d.id.name, {
          line: line(d.start),
          kind: init.callee.name,
          key: keyNode ? source.slice(keyNode.start, keyNode.end).trim() : "",
        });
      }
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
  const mutated = new Set();
  new Visitor({
    AssignmentExpression: (n) => assigned(n.left),
    UpdateExpression: (n) => assigned(n.argument),
    CallExpression: (n) => {
      const callee = n.callee;
      if (!callee?.type?.endsWith("MemberExpression") || callee.computed) return;
      if (callee.object?.type === "Identifier" && collections.has(callee.object.name) && MUTATORS.has(callee.property?.name))
        mutated.add(callee.object.name);
    },
  }).visit(program);
  for (const [name, c] of collections) {
    if (!mutated.has(name)) continue;
    const weak = c.kind === "WeakMap" || c.kind === "WeakSet";
    if (GATEWAY_KEY.test(c.key)) {
      problems.push(
        `${file}:${c.line}: module-level \`${name}\` (${c.kind}<${c.key}, …>) keeps a gateway's memory by its services or configuration: hang it on the services (createGateway)`,
      );
      continue;
    }
    if (weak && MEMO_KEY.test(c.key)) continue;
    if (allowed[name]) continue;
    problems.push(
      `${file}:${c.line}: module-level \`${name}\` (${c.kind}${c.key ? `<${c.key}, …>` : ""}) is added to: a memory of the module's own; hang it on the services (createGateway), or allow it by name in scripts/platform-state.mjs with why it is the same for every gateway`,
    );
  }
  return problems;
}

function tsFiles(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => /\.tsx?$/.test(f) && !/\.test\.tsx?$/.test(f) && !f.endsWith(".d.ts"))
    .map((f) => join(dir, f));
}

/** Every problem under `root`'s src/ and middleware/. */
export function treeProblems(root) {
  return ["src", "middleware"].flatMap((dir) =>
    tsFiles(join(root, dir)).flatMap((f) => moduleStateProblems(relative(root, f).split(sep).join("/"), readFileSync(f, "utf8"))),
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const problems = treeProblems(process.argv[2] ?? process.cwd());
  for (const p of problems) console.error(p);
  if (problems.length) {
    console.error(`\n${problems.length} module-level state problem(s) in src/ and middleware/ (scripts/platform-state.mjs)`);
    process.exit(1);
  }
  console.log("src/, middleware/: no module-level mutable state");
}
