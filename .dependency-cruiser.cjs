// The layout's boundaries (README "Layout"): what may import what. Rules name folders, not files, so the layout stays
// while files move inside a folder. Run: `npm run lint:boundaries` (part of `npm run lint`).
// Layers, bottom up: src/{errors,log,context}.ts → src/web/ (the Web seams: transport, forwarded, request URL, CIDR math,
// the WebSocket interface, the speed helpers' Web side), src/state/ and config/ → src/upstream/ (the upstream client,
// its accounts and records), telemetry, identity
// (tenants, tokens, the caller), payments (entered only through its door, src/payments/index.ts; it announces budget,
// credit and savings events through one port, src/payments/events.ts) → routing (the route table, the body vocabulary, the JSON body reader) → surfaces (search,
// sessions, sandboxes, jobs) and the operator apps (operators: actions with no hono → their HTTP faces (admin API,
// OpenAPI) and alerts, which listen to payments; console, mcp) → src/gateway.ts, src/services.ts → the top: src/host/
// (the Node and Worker entries and the Node-only adapters, src/host/node/) and src/cli/. middleware/ holds the chain's steps only: each imports what it needs from
// src/ below the surfaces, never another step; only src/gateway.ts and the chain's composition (middleware/chain.ts)
// import middleware/.

/** Files that are not the shipped code: tests beside the code, declaration files. */
const notShipped = "\\.test\\.tsx?$|\\.d\\.ts$";
/** The Node-only side: the Node entry, its parts, the CLI. Everything else in src/ is the Web-standard core. */
const nodeSide = "^src/host/node(\\.ts$|/)|^src/cli/";
const base = "^src/(errors|log|context)\\.ts$";
const surfaces = "search|sessions|sandboxes|jobs";
/** npm packages that need Node (sockets, process, native code); the Worker bundle must not reach them. */
const nodeOnly =
  "(undici|ws|ioredis|prom-client|@opentelemetry/(sdk-[^/]+|exporter-[^/]+|resources)|@hono/node-server|swagger-ui-dist|node-pty|@lydell/node-pty|puppeteer-core|playwright-core|@tollgate/emulator|autocannon)(/|$)";
// resolved (node_modules/…, or ../main/node_modules/… through a worktree's symlink) or not (the bare name)
const nodeOnlyPackages = `(^|/)node_modules/${nodeOnly}|^${nodeOnly}`;

/** What a chain step may import from src/. */
const stepMayImport =
  "^src/(errors|log|context|services)\\.ts$|^src/(state|identity|routing|telemetry|payments|sandboxes|agent-policy)/|^src/(web|upstream)/";

/**
 * The Node speed helpers (src/web/speed.ts: the gateway's platform, chosen by its entry) are used only by these
 * files, through src/web/{request-headers,held-body,response-headers}.ts; everything else reads and sets headers
 * and bodies with Hono's API.
 */
const speedHelpers = "^src/web/(request-headers|held-body|response-headers)\\.ts$";
const speedHelperUsers = [
  "src/identity/tenants.ts", // the tenant key (x-api-key), read on every keyed request
  "src/routing/json-body.ts", // the one JSON body reader: a body the runtime holds whole
  "src/search/routes.ts", // cache-control and idempotency-key on the paid search's hot path
  "src/sandboxes/runtime-forward.ts", // a runtime call's body: its length, and the body held whole
  "middleware/body-limit/index.ts", // the declared length against the row's limit
  "middleware/request-id/index.ts", // the headers added to every answer after the handler
  "src/host/node/direct-relay.ts", // an answer whose head the Node entry writes gathers its added headers
];

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
      name: "web-seams-import-nothing-above",
      comment:
        "src/web/ (the Web seams every layer uses: transport, forwarded headers, request URL, client address, public origin, CIDR math, the WebSocket interface, the speed helpers' Web side, background work) is the floor above the base modules: it imports only itself and src/{errors,log,context}.ts.",
      severity: "error",
      from: { path: "^src/web/", pathNot: notShipped },
      to: { path: "^(src|middleware|config)/", pathNot: `^src/web/|${base}` },
    },
    {
      name: "host-is-the-top",
      comment:
        "src/host/ (the Node and Worker entries and the Node-only adapters) is the top of the house: nothing shipped imports it but itself and src/cli/ (bench/ and tests may).",
      severity: "error",
      from: { path: "^(src|middleware|config)/", pathNot: `^src/(host|cli)/|${notShipped}` },
      to: { path: "^src/host/" },
    },
    {
      name: "agent-policy-below-the-table",
      comment:
        "src/agent-policy (the agent-policy engine: the policies a route row names in its agentPolicy field) sits below the route table: it imports only the base modules, config and the Web seams, never routing, a step, a surface or an operator app.",
      severity: "error",
      from: { path: "^src/agent-policy/", pathNot: notShipped },
      to: { path: "^(src|middleware)/", pathNot: `${base}|^src/(agent-policy|web)/` },
    },
    {
      name: "the-table-imports-no-operator",
      comment:
        "src/routing (the route table, its rows' bodies and answers, the admin schemas the rows name) sits below the operators: it imports nothing from src/operators/; the operators import the schemas from it.",
      severity: "error",
      from: { path: "^src/routing/", pathNot: notShipped },
      to: { path: "^src/operators/" },
    },
    {
      name: "node-parts-behind-the-node-entry",
      comment: "src/host/node/ is imported only by src/host/node.ts, src/cli/, bench/ and tests.",
      severity: "error",
      from: { pathNot: `${nodeSide}|^(bench|test)/|${notShipped}` },
      to: { path: "^src/host/node/" },
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
        "The core runs on Cloudflare Workers: no node:* outside src/host/node*, src/cli and config/load-node.ts (the config file and secret files read with node:fs, for the Node entries only).",
      severity: "error",
      from: { path: "^(src|middleware|config)/", pathNot: `${nodeSide}|^config/load-node\\.ts$|${notShipped}` },
      to: { dependencyTypes: ["core"] },
    },
    {
      name: "config-reads-no-files",
      comment: "config/load.ts is the Web half of the loader (the Worker bundles it): files are read in config/load-node.ts.",
      severity: "error",
      from: { path: "^config/load\\.ts$" },
      to: { dependencyTypes: ["core"] },
    },
    {
      name: "core-uses-no-node-only-packages",
      comment:
        "undici, ws, ioredis, prom-client, the OpenTelemetry SDK, @hono/node-server… are Node-only: they sit in src/host/node/ (ioredis in src/state/redis*, which only the Node entry picks).",
      severity: "error",
      from: { path: "^(src|middleware|config)/", pathNot: `${nodeSide}|^src/state/redis|${notShipped}` },
      to: { path: nodeOnlyPackages },
    },
    {
      name: "the-worker-bundle-reaches-no-node-part",
      comment: "What src/host/worker.ts reaches (the Worker bundle) holds no Node entry, Node-only part, Redis store or CLI.",
      severity: "error",
      from: { path: "^src/host/worker\\.ts$" },
      to: { path: "^src/host/node(\\.ts$|/)|^src/state/redis|^src/cli/|^config/load-node\\.ts$", reachable: true },
    },
    {
      name: "workers-runtime-behind-the-worker-entry",
      comment: "cloudflare:* modules are reached only from the Worker entry and the Durable Object store.",
      severity: "error",
      from: { pathNot: "^src/host/worker\\.ts$|^src/state/durable-|^test/" },
      to: { path: "^cloudflare:" },
    },
    {
      name: "chain-steps-below-surfaces",
      comment:
        "A chain step (middleware/<step>/) imports only the base modules, services' types, state, routing, telemetry, the Web seams (src/web), the upstream client (src/upstream), the agent-policy engine (src/agent-policy), payments (and helpers of src/sandboxes): never another surface, an operator app, the gateway or an entry.",
      severity: "error",
      from: { path: "^middleware/[^/]+/", pathNot: notShipped },
      to: { path: "^src/", pathNot: stepMayImport },
    },
    {
      name: "only-the-gateway-and-the-chain-import-steps",
      comment:
        "middleware/ holds the chain's steps: src/ imports them only from src/gateway.ts (which composes the app) and the chain's composition (middleware/chain.ts) mounts them; nothing else in src/ or config/ does.",
      severity: "error",
      from: { path: "^(src|config)/", pathNot: `^src/gateway\\.ts$|${notShipped}` },
      to: { path: "^middleware/" },
    },
    {
      name: "the-chain-is-composed-by-the-gateway",
      comment: "middleware/chain.ts (the chain's composition) is imported only by src/gateway.ts.",
      severity: "error",
      from: { pathNot: `^src/gateway\\.ts$|${notShipped}` },
      to: { path: "^middleware/chain\\.ts$" },
    },
    {
      name: "steps-import-no-other-step",
      comment:
        "A step (middleware/<step>/) imports no other step: what two steps share (the caller, the JSON body, an answer header) lives in src/.",
      severity: "error",
      from: { path: "^middleware/([^/]+)/", pathNot: notShipped },
      to: { path: "^middleware/", pathNot: "^middleware/$1/" },
    },
    {
      name: "speed-helpers-fenced",
      comment: `The Node speed helpers (${speedHelpers}) are used only by: ${speedHelperUsers.join(", ")}. Everything else reads and sets headers and bodies with Hono's API.`,
      severity: "error",
      from: {
        pathNot: `^(${speedHelperUsers.map((f) => f.replace(/[.]/g, "\\.")).join("|")})$|^src/web/(request-headers|held-body|response-headers|speed)\\.ts$|${notShipped}`,
      },
      to: { path: speedHelpers },
    },
    {
      name: "identity-below-the-chain",
      comment:
        "src/identity (tenants, tokens, the caller, console sessions, operator roles) imports only the base modules, services' types, state, config and the Web seams (src/web): never routing, a step, a surface or an operator app.",
      severity: "error",
      from: { path: "^src/identity/", pathNot: notShipped },
      to: { path: "^(src|middleware)/", pathNot: `${base}|^src/services\\.ts$|^src/(identity|state|web)/` },
    },
    {
      name: "chain-mounts-rows-not-apps",
      comment: "middleware/chain.ts mounts the route table's rows: it never imports the gateway, an entry or the CLI.",
      severity: "error",
      from: { path: "^middleware/chain\\.ts$" },
      to: { path: "^src/gateway(-deps)?\\.ts$|^src/host/|^src/cli/" },
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
        path: `^src/(${surfaces}|cli|host)/|^src/gateway(-deps)?\\.ts$`,
        pathNot: `^src/(${[from, ...allowed].join("|")})/`,
      },
    })),
    {
      name: "lower-layers-import-no-surface",
      comment:
        "web, upstream, telemetry, identity, payments and routing do not import a surface's routes, an operator app's admin/console/MCP parts, the gateway or an entry.",
      severity: "error",
      from: {
        path: "^src/(web|upstream|telemetry|identity|payments|routing)/",
        pathNot: `routes?\\.tsx?$|${notShipped}`,
      },
      to: { path: `^src/(search|jobs|console|mcp|cli)/|^src/gateway(-deps)?\\.ts$|^src/(${surfaces})/.*routes?\\.tsx?$` },
    },
    {
      name: "payments-through-its-door",
      comment:
        "src/payments/index.ts is the money side's one door: src/ outside payments/, middleware/ and config/ import nothing else of src/payments/ (the x402 payer and the credit meter are each one entry behind it).",
      severity: "error",
      from: { path: "^(src|middleware|config)/", pathNot: `^src/payments/|${notShipped}` },
      to: { path: "^src/payments/", pathNot: "^src/payments/index\\.ts$" },
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
      name: "oauth-imports-no-console",
      comment:
        "The OAuth server (src/oauth/) and the console are two apps side by side: they share the page kit (src/pages/), the provider sign-in's start (src/identity/provider-sign-in.ts) and the console-link action (src/operators/actions/console-links.ts), never each other's files.",
      severity: "error",
      from: { path: "^src/oauth/" },
      to: { path: "^src/console/" },
    },
    {
      name: "admin-api-imports-no-console",
      comment:
        "The admin API (src/operators/http/) calls operator actions; it imports nothing of the console (a console link is an action).",
      severity: "error",
      from: { path: "^src/operators/http/" },
      to: { path: "^src/console/" },
    },
    {
      name: "page-kit-below-its-pages",
      comment:
        "The page kit (src/pages/: the document, the style sheet, a scriptless page's headers) imports none of the apps that use it.",
      severity: "error",
      from: { path: "^src/pages/" },
      to: { path: "^src/(console|oauth|operators|mcp)/" },
    },
    {
      name: "upstream-and-state-below-the-chain",
      comment:
        "src/upstream (the upstream client, accounts, records) and src/state sit below the chain: they import nothing from middleware/.",
      severity: "error",
      from: { path: "^src/(upstream|state)/", pathNot: notShipped },
      to: { path: "^middleware/" },
    },
    {
      name: "config-imports-little-of-src",
      comment:
        "config/ (schema and loader) imports from src/ only pure helpers of the Web seams (cidr) and operators (alert destinations).",
      severity: "error",
      from: { path: "^config/" },
      to: { path: "^(src|middleware)/", pathNot: "^src/(web|operators)/" },
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
      comment: "Every module is reached from an entry (src/host/node.ts, src/host/worker.ts, src/cli/) or is a test.",
      severity: "error",
      from: {
        orphan: true,
        pathNot: `${notShipped}|^src/host/(node|worker)\\.ts$|^src/cli/(index|dev-worker)\\.ts$`,
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
