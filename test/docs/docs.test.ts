// The user docs hold together: the README is a short guide with a table of contents; every page in docs/ is reached by
// links from it; every relative link (and its #anchor) resolves; the generated references (configuration, metrics,
// routes) are what `npm run docs:gen` writes; the product's docs carry no development history.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { generatedDocs } from "../../scripts/gen-docs.js";

const ROOT = process.cwd();
const read = (p: string) => readFileSync(join(ROOT, p), "utf8");
const DOCS = readdirSync(join(ROOT, "docs"))
  .filter((f) => f.endsWith(".md"))
  .map((f) => `docs/${f}`);
/** The pages whose links are walked: the README, docs/ and the measuring guide. */
const WALKED = (p: string) => p === "README.md" || (p.startsWith("docs/") && p.endsWith(".md")) || p === "bench/PROFILE.md";

/** Markdown with fenced code blocks and inline code taken out (links inside code are not links). */
const prose = (md: string) => md.replace(/^```[\s\S]*?^```$/gm, "").replace(/`[^`\n]*`/g, "");

/** GitHub's anchor for a heading: lower case, punctuation dropped, each space a hyphen; repeats get -1, -2… */
function anchors(md: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of md.replace(/^```[\s\S]*?^```$/gm, "").matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const text = m[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1");
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** Every inline link and image target of a page. */
const links = (md: string) => [...prose(md).matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);

describe("README", () => {
  const readme = read("README.md");

  it("is a guide of at most 350 lines", () => {
    expect(readme.split("\n").length).toBeLessThanOrEqual(350);
  });

  it("opens with a table of contents naming every section", () => {
    const contents = readme.split("\n").find((l) => l.startsWith("**Contents:**"));
    expect(contents, "a **Contents:** line").toBeDefined();
    const block = readme.slice(readme.indexOf("**Contents:**")).split("\n\n")[0]!;
    for (const [, heading] of readme.matchAll(/^## (.+)$/gm)) {
      const slug = [...anchors(`## ${heading}`)][0]!;
      expect(block, `the contents should link #${slug}`).toContain(`(#${slug})`);
    }
  });

  it("keeps the two commands: the embedded default and the test command CI runs", () => {
    expect(readme).toContain("./scripts/setup.sh && npm start");
    expect(readme).toContain("./scripts/setup.sh && npm test");
    expect(read(".ci/run")).toContain("./scripts/setup.sh && npm test");
    expect(readme).toMatch(/^## To production$/m);
  });
});

describe("links", () => {
  // Walk from the README over every page it reaches; check every relative link on the way.
  const reached = new Set<string>(["README.md"]);
  const broken: string[] = [];
  const queue = ["README.md"];
  while (queue.length) {
    const page = queue.shift()!;
    for (const target of links(read(page))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      const [path, anchor] = target.split("#") as [string, string | undefined];
      const file = path ? normalize(join(dirname(page), decodeURIComponent(path))) : page;
      const where = `${page} → ${target}`;
      if (relative(ROOT, join(ROOT, file)).startsWith("..") || !existsSync(join(ROOT, file))) {
        broken.push(`${where}: no such file`);
        continue;
      }
      const isFile = statSync(join(ROOT, file)).isFile();
      if (anchor && isFile && file.endsWith(".md") && !anchors(read(file)).has(anchor)) broken.push(`${where}: no heading #${anchor}`);
      if (isFile && WALKED(file) && !reached.has(file)) {
        reached.add(file);
        queue.push(file);
      }
    }
  }

  it("every relative link and anchor resolves", () => {
    expect(broken).toEqual([]);
  });

  it("every page in docs/ is reached from the README", () => {
    expect(DOCS.filter((d) => !reached.has(d))).toEqual([]);
  });
});

describe("generated references", () => {
  it("are what `npm run docs:gen` writes (configuration from the schema, metrics from the registry, routes)", () => {
    const stale: string[] = [];
    for (const [path, content] of generatedDocs()) {
      const committed = read(path);
      if (committed === content) continue;
      const a = committed.split("\n");
      const b = content.split("\n");
      const at = a.findIndex((l, i) => l !== b[i]);
      stale.push(`${path} is stale (first difference at line ${at + 1}: ${JSON.stringify(a[at] ?? "")} → ${JSON.stringify(b[at] ?? "")})`);
    }
    expect(stale, "run `npm run docs:gen` and commit the pages").toEqual([]);
  });

  it("cover every field of the configuration and every metric family", async () => {
    const { metricFamilies } = await import("../../scripts/gen-docs.js");
    const config = read("docs/configuration.md");
    for (const path of ["server.publicOrigin", "state.confirmReplicas", "tenants[].budget.daily", "alerts.rules.stateDown.afterSeconds"])
      expect(config).toContain(`\`${path}\``);
    const metrics = read("docs/metrics.md");
    const families = metricFamilies();
    expect(families.length).toBeGreaterThan(20);
    for (const f of families) expect(metrics).toContain(`\`${f.name}\``);
  });
});

describe("no development history in the product's docs", () => {
  const DIARY = [
    /\b(second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth) session\b/i,
    /\bsession \d+\b/i,
    /\bwave[- ]?\d+\b/i,
    /\bissue #?\d+\b/i,
    /\bthe session's (start|end)\b/i,
  ];
  for (const page of ["README.md", ...DOCS, "bench/PROFILE.md"])
    it(page, () => {
      const hits = read(page)
        .split("\n")
        .flatMap((line, i) => (DIARY.some((re) => re.test(line)) ? [`${page}:${i + 1}: ${line.trim()}`] : []));
      expect(hits).toEqual([]);
    });
});

describe("the configuration reference generator", () => {
  it("names every field of a schema it has not seen, whatever its kind, with its type, default and description", async () => {
    const z = await import("zod");
    const { configReference } = await import("../../scripts/gen-docs.js");
    const schema = z.strictObject({
      plain: z.string().describe("a described string"),
      level: z.enum(["low", "high"]).default("low").meta({ description: "from meta" }),
      either: z.union([z.string(), z.number().int().min(1)]).optional(),
      count: z.number().int().positive().max(10).default(3),
      ratio: z.number().positive().max(1),
      maybe: z.string().nullable().optional(),
      fixed: z.literal("v1").default("v1"),
      trimmed: z.string().transform((s) => s.trim()),
      later: z.lazy(() => z.string()).optional(),
      pools: z.record(z.string(), z.strictObject({ size: z.number().int().describe("pool size") })).default({}),
      nested: z.strictObject({ deep: z.strictObject({ flag: z.boolean().default(false) }).default({ flag: false }) }).optional(),
      list: z.array(z.strictObject({ name: z.string() })).default([]),
    });
    const md = configReference(schema);
    for (const line of [
      "| `plain` | string | required | a described string |",
      '| `level` | "low" \\| "high" | `"low"` | from meta |',
      "| `either` | string or integer ≥ 1 | — |",
      "| `count` | integer 1–10 | `3` |",
      "| `ratio` | number > 0, ≤ 1 | required |",
      '| `fixed` | "v1" | `"v1"` |',
      "| `trimmed` | string | required |",
      "| `later` | string | — |",
      "| `pools.<string>.size` | integer | required | pool size |",
      "| `nested.deep.flag` | boolean | `false` |",
      "| `list[].name` | string | required |",
    ])
      expect(md).toContain(line);
  });
});
