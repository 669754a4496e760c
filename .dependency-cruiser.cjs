// The layout's boundaries (README "Layout"): what may import what. Rules name folders, not files, so the layout stays
// while files move inside a folder. Run: `npm run lint:boundaries` (part of `npm run lint`).
// Layers, bottom up: src/{errors,log,context}.ts, src/state/ and config/ → platform (Web parts), telemetry,
// payments (it announces budget and credit events through one port, src/payments/events.ts) → routing and middleware/
// (the chain; identity lives in middleware/identify) → surfaces (search, sessions, sandboxes, jobs) and the operator
// apps (operators: actions with no hono → their HTTP faces (admin API, OpenAPI) and alerts, which listen to payments;
// console, mcp) → src/gateway.ts, src/services.ts, the entries (src/platform/{node,worker}.ts, src/cli/).

/** Files that are not the shipped code: tests beside the code, declaration files. */
const notShipped = "\\.test\\.tsx?$|\\.d\\.ts$";
/** The Node-only side: the Node entry, its parts, the CLI. Everything else in src/ is the Web-standard core. */
const nodeSide = "^src/platform/node(\\.ts$|/)|^src/cli/";
const base = "^src/(errors|log|context)\\.ts$";
const surfaces = "search|sessions|sandboxes|jobs";
/** npm packages that need Node (sockets, process, native code); the Worker bundle must not reach them. */
const nodeOnly =
  "(undici|ws|ioredis|prom-client|@opentelemetry/(sdk-[^/]+|exporter-[^/]+|resources)|@hono/node-server|swagger-ui-dist|node-pty|@lydell/node-pty|puppeteer-core|playwright-core|@tollgate/emulator|autocannon)(/|$)";
// resolved (node_modules/…, or ../main/node_modules/… through a worktree's symlink) or not (the bare name)
const nodeOnlyPackages = `(^|/)node_modules/${nodeOnly}|^${nodeOnly}`;

/** What a chain step may import from src/. */
const stepMayImport =
  "^src/(errors|log|context|services)\\.ts$|^src/(state|routing|telemetry|payments|sandboxes)/|^src/platform/(?!node|worker)";

/** A surface may import another surface only through these declared seams (folder → folder). */
const seams = {
  // x402 sessions are browser sessions paid per call: they reuse the sessions surface's access, rewrite and wire.
  search: ["sessions"],
  // a session's files and live page go through the sandbox runtime forwarder and its presigned links.
  sessions: ["sandboxes"],
  sandboxes: [],
  jobs: [],
};

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "base-imports-no-surface",
      comment: "src/{errors,log,context}.ts are the floor: they import only each other and src/state (its error kinds).",
      severity: "error",
      from: { path: base },
      to: { path: "^(src|middleware|config)/", pathNot: `${base}|^src/state/` },
    },
    {
      name: "state-is-a-leaf",
      comment: "src/state (the stores and their contract) imports only itself, the base modules and config.",
      severity: "error",
      from: { path: "^src/state/", pathNot: notShipped },
      to: { path: "^(src|middleware)/", pathNot: `^src/state/|${base}` },
    },
    {
      name: "node-parts-behind-the-node-entry",
      comment: "src/platform/node/ is imported only by src/platform/node.ts, src/cli/, bench/ and tests.",
      severity: "error",
      from: { pathNot: `${nodeSide}|^(bench|test)/|${notShipped}` },
      to: { path: "^src/platform/node/" },
    },
    {
      name: "redis-behind-the-node-entry",
      comment: "The Redis stores (ioredis) are picked by the Node entry; the core sees only src/state/types.ts.",
      severity: "error",
      from: { pathNot: `${nodeSide}|^src/state/redis|^(bench|test)/|${notShipped}` },
      to: { path: "^src/state/redis" },
    },
    {
      name: "core-uses-no-node-builtins",
      comment:
        "The core runs on Cloudflare Workers: no node:* outside src/platform/node*, src/cli (config/load.ts may lazily import node:fs/promises to read a file, which Workers never do).",
      severity: "error",
      from: { path: "^(src|middleware|config)/", pathNot: `${nodeSide}|^config/load\\.ts$|${notShipped}` },
      to: { dependencyTypes: ["core"] },
    },
    {
      name: "config-reads-files-lazily",
      comment: "config/load.ts reaches node:fs/promises only through a dynamic import (the Worker bundle never runs it).",
      severity: "error",
      from: { path: "^config/load\\.ts$" },
      to: { dependencyTypes: ["core"], dependencyTypesNot: ["dynamic-import"] },
    },
    {
      name: "core-uses-no-node-only-packages",
      comment:
        "undici, ws, ioredis, prom-client, the OpenTelemetry SDK, @hono/node-server… are Node-only: they sit in src/platform/node/ (ioredis in src/state/redis*, which only the Node entry picks).",
      severity: "error",
      from: { path: "^(src|middleware|config)/", pathNot: `${nodeSide}|^src/state/redis|${notShipped}` },
      to: { path: nodeOnlyPackages },
    },
    {
      name: "the-worker-bundle-reaches-no-node-part",
      comment: "What src/platform/worker.ts reaches (the Worker bundle) holds no Node entry, Node-only part, Redis store or CLI.",
      severity: "error",
      from: { path: "^src/platform/worker\\.ts$" },
      to: { path: "^src/platform/node(\\.ts$|/)|^src/state/redis|^src/cli/", reachable: true },
    },
    {
      name: "workers-runtime-behind-the-worker-entry",
      comment: "cloudflare:* modules are reached only from the Worker entry and the Durable Object store.",
      severity: "error",
      from: { pathNot: "^src/platform/worker\\.ts$|^src/state/durable-|^test/" },
      to: { path: "^cloudflare:" },
    },
    {
      name: "chain-steps-below-surfaces",
      comment:
        "A chain step (middleware/<step>/) imports only the base modules, services' types, state, routing, telemetry, platform's Web parts, payments (and helpers of src/sandboxes): never another surface, an operator app, the gateway or an entry.",
      severity: "error",
      from: { path: "^middleware/[^/]+/", pathNot: `^middleware/identify/|${notShipped}` },
      to: { path: "^src/", pathNot: stepMayImport },
    },
    {
      name: "the-caller-resolver-below-surfaces",
      comment:
        "middleware/identify (the one caller resolver) imports what any step may, and also the operator side's caller kinds (operator roles, console sessions): never a route module (the next rule), a surface, the gateway or an entry.",
      severity: "error",
      from: { path: "^middleware/identify/", pathNot: notShipped },
      to: { path: "^src/", pathNot: `${stepMayImport}|^src/(operators|console)/` },
    },
    {
      name: "chain-mounts-rows-not-apps",
      comment: "middleware/chain.ts mounts the route table's rows: it never imports the gateway, an entry or the CLI.",
      severity: "error",
      from: { path: "^middleware/chain\\.ts$" },
      to: { path: "^src/gateway\\.ts$|^src/platform/(node|worker)(\\.ts$|/)|^src/cli/" },
    },
    {
      name: "chain-steps-import-no-route-module",
      comment: "A chain step never imports a route module (a surface's or an own route's routes.ts).",
      severity: "error",
      from: { path: "^middleware/[^/]+/", pathNot: notShipped },
      to: { path: "^src/.*routes?\\.tsx?$" },
    },
    ...Object.entries(seams).map(([from, allowed]) => ({
      name: `surface-${from}-through-seams`,
      comment: `src/${from} imports another surface only through a declared seam (${allowed.join(", ") || "none"}), never the gateway, an entry or the CLI.`,
      severity: "error",
      from: { path: `^src/${from}/`, pathNot: notShipped },
      to: {
        path: `^src/(${surfaces}|cli)/|^src/gateway\\.ts$|^src/platform/(node|worker)(\\.ts$|/)`,
        pathNot: `^src/(${[from, ...allowed].join("|")})/`,
      },
    })),
    {
      name: "lower-layers-import-no-surface",
      comment:
        "platform (Web parts), telemetry, payments and routing do not import a surface's routes, an operator app's admin/console/MCP parts, the gateway or an entry.",
      severity: "error",
      from: {
        path: "^src/(platform|telemetry|payments|routing)/",
        pathNot: `${nodeSide}|^src/platform/worker\\.ts$|routes?\\.tsx?$|${notShipped}`,
      },
      to: { path: `^src/(search|jobs|console|mcp|cli)/|^src/gateway\\.ts$|^src/(${surfaces})/.*routes?\\.tsx?$` },
    },
    {
      name: "payments-import-no-operators",
      comment:
        "src/payments announces budget and credit events through its one port (src/payments/events.ts, wired by src/gateway.ts); src/operators listens: no import from payments into operators.",
      severity: "error",
      from: { path: "^src/payments/" },
      to: { path: "^src/operators/" },
    },
    {
      name: "operator-actions-import-no-hono",
      comment:
        "src/operators/actions/ (the operators' domain operations: tenants, keys, tokens, usage, views, the kill switch…) take plain values and an actor, never a request: they import no hono. Their HTTP faces (src/operators/http/, src/console/) read the request and call them.",
      severity: "error",
      from: { path: "^src/operators/actions/" },
      to: { path: "(^|/)node_modules/hono/|^hono(/|$)" },
    },
    {
      name: "operator-actions-below-their-faces",
      comment: "src/operators/actions/ import none of their HTTP faces: the admin API and OpenAPI (src/operators/http/) or the console.",
      severity: "error",
      from: { path: "^src/operators/actions/" },
      to: { path: "^src/operators/http/|^src/console/" },
    },
    {
      name: "platform-and-state-below-the-chain",
      comment:
        "src/platform (the runtime seams: transport, upstream, request URL…) and src/state sit below the chain: they import nothing from middleware/.",
      severity: "error",
      from: { path: "^src/(platform|state)/", pathNot: `${nodeSide}|^src/platform/worker\\.ts$|^src/platform/node\\.ts$|${notShipped}` },
      to: { path: "^middleware/" },
    },
    {
      name: "config-imports-little-of-src",
      comment: "config/ (schema and loader) imports from src/ only pure helpers of platform (cidr) and operators (alert destinations).",
      severity: "error",
      from: { path: "^config/" },
      to: { path: "^(src|middleware)/", pathNot: "^src/(platform|operators)/" },
    },
    {
      name: "shipped-code-imports-no-tests-benches-or-emulator",
      comment:
        "src/, middleware/ and config/ never import test/, bench/ or emulator/; src/cli/ reaches the emulator only as the @tollgate/emulator package.",
      severity: "error",
      from: { path: "^(src|middleware|config)/", pathNot: notShipped },
      to: { path: "^(test|bench|emulator)/", dependencyTypesNot: ["aliased-tsconfig-paths"] },
    },
    {
      name: "emulator-package-only-from-the-cli",
      comment: "Only src/cli/ (dev stack, dev worker) starts the emulator.",
      severity: "error",
      from: { path: "^(src|middleware|config)/", pathNot: `^src/cli/|${notShipped}` },
      to: { path: "^emulator/" },
    },
    {
      name: "no-orphans",
      comment: "Every module is reached from an entry (src/platform/node.ts, src/platform/worker.ts, src/cli/) or is a test.",
      severity: "error",
      from: {
        orphan: true,
        pathNot: `${notShipped}|^src/platform/(node|worker)\\.ts$|^src/cli/(index|dev-worker)\\.ts$`,
      },
      to: {},
    },
  ],
  options: {
    // Cruise the shipped code; tests beside it are read for their imports but test/, bench/, emulator/ are not followed.
    doNotFollow: { path: ["node_modules", "^(test|bench|emulator)/"] },
    exclude: { path: "^(emulator/)?dist/" },
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    combinedDependencies: false,
    moduleSystems: ["es6"],
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "types", "node", "default"],
      extensions: [".ts", ".tsx", ".js", ".mjs", ".json", ".d.ts"],
    },
    cache: false,
    progress: { type: "none" },
  },
};
