// The boundary lint catches what it is there for (issue 41, "must show"): violations planted in a scratch tree laid
// out as the repository are run through the same dependency-cruiser config as `npm run lint:boundaries`, and the
// module-level state check (scripts/platform-state.mjs, `npm run lint:state`) through planted src/ and middleware/ files.
// Each planted violation must be reported under its rule; each allowed import beside it must not be.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = process.cwd();

function plant(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-boundaries-"));
  const all: Record<string, string> = {
    "tsconfig.json": JSON.stringify({
      compilerOptions: { target: "ES2022", module: "ESNext", moduleResolution: "Bundler", strict: true, noEmit: true },
      include: ["src", "middleware", "config"],
    }),
    ...files,
  };
  for (const [path, text] of Object.entries(all)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

interface Violation {
  rule: string;
  from: string;
  to: string;
}

/** dependency-cruiser over the scratch tree, with the repository's config (as `npm run lint:boundaries`). */
function cruise(dir: string): Violation[] {
  const run = spawnSync(
    process.execPath,
    [
      "--import",
      join(ROOT, "scripts/depcruise-typescript.mjs"),
      join(ROOT, "node_modules/dependency-cruiser/bin/dependency-cruise.mjs"),
      "--config",
      join(ROOT, ".dependency-cruiser.cjs"),
      "--output-type",
      "json",
      "src",
      "middleware",
    ],
    { cwd: dir, encoding: "utf8", timeout: 60_000 },
  );
  if (!run.stdout) throw new Error(`dependency-cruiser gave no output: ${run.stderr}`);
  const out = JSON.parse(run.stdout) as { summary: { violations: { from: string; to: string; rule: { name: string } }[] } };
  return out.summary.violations.map((v) => ({ rule: v.rule.name, from: v.from, to: v.to }));
}

const step = (name: string) => `export function ${name}() {}\n`;

describe("the boundary lint catches planted violations", () => {
  let dir: string;
  let found: Violation[];
  beforeAll(() => {
    dir = plant({
      // allowed: the gateway imports the chain and a step, the chain mounts the steps
      "src/host/node.ts": 'import { createGateway } from "../gateway.js";\ncreateGateway();\n',
      "src/gateway.ts":
        'import { mount } from "../middleware/chain.js";\nimport { requestId } from "../middleware/request-id/index.js";\nexport function createGateway() { mount(); requestId(); }\n',
      "middleware/chain.ts":
        'import { rateLimit } from "./rate-limit/index.js";\nimport { requireOwner } from "./owner/index.js";\nimport { identify } from "./identify/index.js";\nexport function mount() { rateLimit(); requireOwner(); identify(); }\n',
      "middleware/request-id/index.ts": step("requestId"),
      "middleware/rate-limit/index.ts": step("rateLimit"),
      // allowed: a step imports identity; planted: it imports another step
      "middleware/owner/index.ts":
        'import { tenant } from "../../src/identity/tenants.js";\nimport { rateLimit } from "../rate-limit/index.js";\nexport function requireOwner() { tenant(); rateLimit(); }\n',
      // planted: the identify step imports the console (its exception is gone)
      "middleware/identify/index.ts":
        'import { sessionById } from "../../src/console/session.js";\nexport function identify() { sessionById(); }\n',
      "src/console/session.ts": step("sessionById"),
      // planted: a surface imports a step; the route table imports the chain
      "src/search/routes.ts":
        'import { rateLimit } from "../../middleware/rate-limit/index.js";\nimport { hotHeader } from "../web/request-headers.js";\nexport function searchRoutes() { rateLimit(); hotHeader(); }\n',
      // the Node speed helpers: allowed in the search routes (listed), planted in the sessions routes (not listed)
      "src/web/request-headers.ts": step("hotHeader"),
      "src/web/response-headers.ts": step("setResponseHeader"),
      "src/sessions/routes.ts":
        'import { setResponseHeader } from "../web/response-headers.js";\nexport function sessionRoutes() { setResponseHeader(); }\n',
      "src/routing/table.ts": 'import { mount } from "../../middleware/chain.js";\nexport function table() { mount(); }\n',
      // planted: identity imports the route table
      "src/identity/tenants.ts": 'import { table } from "../routing/table.js";\nexport function tenant() { table(); }\n',
    });
    found = cruise(dir);
  }, 90_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    ["only-the-gateway-and-the-chain-import-steps", "src/search/routes.ts", "middleware/rate-limit/index.ts"],
    ["only-the-gateway-and-the-chain-import-steps", "src/routing/table.ts", "middleware/chain.ts"],
    ["the-chain-is-composed-by-the-gateway", "src/routing/table.ts", "middleware/chain.ts"],
    ["steps-import-no-other-step", "middleware/owner/index.ts", "middleware/rate-limit/index.ts"],
    ["chain-steps-below-surfaces", "middleware/identify/index.ts", "src/console/session.ts"],
    ["identity-below-the-chain", "src/identity/tenants.ts", "src/routing/table.ts"],
    ["speed-helpers-fenced", "src/sessions/routes.ts", "src/web/response-headers.ts"],
  ])("%s: %s → %s", (rule, from, to) => {
    expect(found).toContainEqual({ rule, from, to });
  });

  it("the allowed imports beside them are not reported", () => {
    const allowed = [
      ["src/gateway.ts", "middleware/chain.ts"],
      ["src/gateway.ts", "middleware/request-id/index.ts"],
      ["middleware/chain.ts", "middleware/rate-limit/index.ts"],
      ["middleware/chain.ts", "middleware/owner/index.ts"],
      ["middleware/owner/index.ts", "src/identity/tenants.ts"],
      ["src/search/routes.ts", "src/web/request-headers.ts"],
    ];
    for (const [from, to] of allowed) expect(found.filter((v) => v.from === from && v.to === to)).toEqual([]);
  });
});

/** scripts/platform-state.mjs over a root: its exit status and what it printed. */
function platformState(root: string): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, [join(ROOT, "scripts/platform-state.mjs"), root], { encoding: "utf8", timeout: 30_000 });
  return { status: run.status, output: run.stdout + run.stderr };
}

describe("no module-level mutable state in src/ and middleware/ (npm run lint:state)", () => {
  it("passes on the repository", () => {
    const r = platformState(ROOT);
    expect(r.output).toContain("no module-level mutable state");
    expect(r.status).toBe(0);
  });

  it("refuses a top-level let, a top-level var and an object used as a setter's store; not request-keyed caches", () => {
    const dir = plant({
      "src/platform/planted-let.ts":
        "let reader: (() => string) | undefined;\nexport function readWith(r: typeof reader) {\n  reader = r;\n}\nexport const read = () => reader?.();\n",
      "src/platform/planted-var.ts": "export var count = 0;\n",
      "src/platform/planted-store.ts":
        "export const hooks: { write?: (s: string) => void } = {};\nexport function writeWith(w: (s: string) => void) {\n  hooks.write = w;\n}\n",
      "src/platform/planted-fine.ts":
        'const seen = new WeakMap<Request, number>();\nconst MARK = Symbol("mark");\nexport const NAMES = new Set(["a"]);\nexport function mark(req: Request & { [MARK]?: number }) {\n  req[MARK] = 1;\n  seen.set(req, 1);\n  let local = 0;\n  local++;\n  return local;\n}\n',
      "src/platform/planted.test.ts": "let inATest = 1;\ninATest++;\n",
    });
    try {
      const r = platformState(dir);
      expect(r.status).toBe(1);
      expect(r.output).toContain("src/platform/planted-let.ts:1: top-level `let reader`");
      expect(r.output).toContain("src/platform/planted-var.ts:1: top-level `var count`");
      expect(r.output).toContain("src/platform/planted-store.ts:3: a property of module-level `hooks` is assigned");
      expect(r.output).not.toContain("planted-fine.ts");
      expect(r.output).not.toContain("planted.test.ts");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses a gateway's memory kept in a module anywhere in src/ or middleware/: a collection keyed by the services or the config, or one the module adds to", () => {
    const dir = plant({
      // the shapes issue 52 removed: per-gateway memories keyed by the services object or the configuration
      "src/payments/planted-spend.ts":
        'import type { GatewayServices } from "../services.js";\nconst memories = new WeakMap<GatewayServices, Map<string, number>>();\nexport function memoryOf(s: GatewayServices) {\n  let m = memories.get(s);\n  if (!m) memories.set(s, (m = new Map()));\n  return m;\n}\n',
      "src/payments/planted-amounts.ts":
        'import type { TollgateConfig } from "../../config/schema.js";\nconst configs = new WeakMap<TollgateConfig, bigint>();\nexport const remember = (c: TollgateConfig) => configs.set(c, 1n);\n',
      "src/sandboxes/planted-hosts.ts":
        "const written = new WeakMap<object, number>();\nexport const wrote = (s: object) => written.set(s, 1);\n",
      // a process-wide memory of a fact (not a pure memo): refused unless allowed by name, with why
      "middleware/planted/index.ts":
        "const approved = new Map<string, number>();\nexport const approve = (k: string) => void approved.set(k, Date.now());\n",
      // fine: memos of a request, an answer or a schema; a constant set only read; a map local to a function
      "src/routing/planted-fine.ts":
        'import { z } from "zod";\nconst urls = new WeakMap<Request, URL>();\nconst bodies = new WeakMap<Response, string>();\nconst refs = new WeakMap<z.ZodType, boolean>();\nconst NAMES = new Set(["a", "b"]);\nexport function f(r: Request, a: Response, s: z.ZodType) {\n  urls.set(r, new URL(r.url));\n  bodies.set(a, "");\n  refs.set(s, true);\n  const local = new Map<string, number>();\n  local.set("x", 1);\n  return NAMES.has(r.method);\n}\n',
    });
    try {
      const r = platformState(dir);
      expect(r.status).toBe(1);
      expect(r.output).toContain(
        "src/payments/planted-spend.ts:2: module-level `memories` (WeakMap<GatewayServices, …>) keeps a gateway's memory",
      );
      expect(r.output).toContain(
        "src/payments/planted-amounts.ts:2: module-level `configs` (WeakMap<TollgateConfig, …>) keeps a gateway's memory",
      );
      expect(r.output).toContain("src/sandboxes/planted-hosts.ts:1: module-level `written` (WeakMap<object, …>) keeps a gateway's memory");
      expect(r.output).toContain("middleware/planted/index.ts:1: module-level `approved` (Map<string, …>) is added to");
      expect(r.output).not.toContain("planted-fine.ts");
      expect(r.output).toContain("4 module-level state problem(s)");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("allows by name only a memory the same for every gateway, never one keyed by the services or the config", async () => {
    const { moduleStateProblems } = (await import(join(ROOT, "scripts/platform-state.mjs"))) as {
      moduleStateProblems: (file: string, source: string, allow?: Record<string, Record<string, string>>) => string[];
    };
    const allow = { "src/x.ts": { shown: "a pure function's memo", byServices: "tried anyway" } };
    const memo =
      "const shown = new Map<bigint, string>();\nexport const usd = (n: bigint) => shown.get(n) ?? (shown.set(n, String(n)), String(n));\n";
    expect(moduleStateProblems("src/x.ts", memo, allow)).toEqual([]);
    expect(moduleStateProblems("src/y.ts", memo, allow)).toHaveLength(1); // allowed in its own file only
    const keyed =
      "const byServices = new WeakMap<AlertServices, number>();\nexport const d = (s: AlertServices) => byServices.set(s, 1);\n";
    expect(moduleStateProblems("src/x.ts", keyed, allow)).toEqual([
      "src/x.ts:1: module-level `byServices` (WeakMap<AlertServices, …>) keeps a gateway's memory by its services or configuration: hang it on the services (createGateway)",
    ]);
  });
});
