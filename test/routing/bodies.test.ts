// Every row declares its body, and every field either official SDK sends is declared: the Node SDK's parameter types are
// walked from its .d.ts files (a new SDK field without a declaration fails here); the Python SDK's models are read
// from its source and checked in ./sdk-drift.test.ts.
import { describe, expect, it } from "vitest";
import type * as z from "zod";
import { bodyProblems, declaredPaths, namedRefs, referenceFields } from "../../src/routing/bodies/declare.js";
import { createSessionBody } from "../../src/routing/bodies/sessions.js";
import { ROUTES, type RouteRow } from "../../src/routing/table.js";
import { PY_REQUEST } from "./python-requests.js";
import { sdkFieldPaths } from "./sdk-param-types.js";

/** Row (by name, or a prefix ending in `*`) → the SDK type it receives, and how the SDK renames fields on the wire. */
const SDK_TYPE: Record<string, { type: string; renames?: Record<string, string>; wrap?: string }> = {
  "x402.web.search": { type: "WebSearchParams" },
  "web.search": { type: "WebSearchParams" },
  "x402.web.fetch": { type: "FetchParams" },
  "web.fetch": { type: "FetchParams" },
  "web.batchFetch.start": { type: "StartBatchFetchJobParams" },
  "web.crawl.start": { type: "StartWebCrawlJobParams" },
  "scrape.start": { type: "StartScrapeJobParams" },
  "scrape.batch.start": { type: "StartBatchScrapeJobParams" },
  "crawl.start": { type: "StartCrawlJobParams" },
  "extract.start": { type: "StartExtractJobParams" },
  "task.browser-use.start": { type: "StartBrowserUseTaskParams" },
  "task.claude-computer-use.start": { type: "StartClaudeComputerUseTaskParams" },
  "task.gemini-computer-use.start": { type: "StartGeminiComputerUseTaskParams" },
  "task.grok-computer-use.start": { type: "StartGrokComputerUseTaskParams" },
  "task.meta-computer-use.start": { type: "StartMetaComputerUseTaskParams" },
  "task.cua.start": { type: "StartCuaTaskParams" },
  "task.hyper-agent.start": { type: "StartHyperAgentTaskParams" },
  "session.create": { type: "CreateSessionParams" },
  "x402.session.create": { type: "CreateSessionParams" },
  "session.captcha": { type: "CaptchaEvaluationParams" },
  "session.computerAction": { type: "ComputerActionParams" },
  "sandbox.create": { type: "CreateSandboxParams", renames: { cpu: "vcpus", memoryMiB: "memMiB", diskMiB: "diskSizeMiB" } },
  "sandbox.snapshot": { type: "SandboxMemorySnapshotParams" },
  "sandbox.expose": { type: "SandboxExposeParams" },
  "sandbox.network": { type: "SandboxNetworkPolicyPatch" },
  "image.build.create": { type: "CreateSandboxImageBuildParams" },
  "image.build.complete": { type: "CompleteSandboxImageBuildParams" },
  "volume.create": { type: "CreateVolumeParams" },
  "profile.create": { type: "CreateProfileParams" },
  "profile.fork": { type: "ForkProfileParams" },
};

/** JSON rows whose body the SDK builds inline rather than from an exported type: what it sends is asserted below. */
const INLINE_SDK_BODIES: Record<string, unknown[]> = {
  "session.extend": [{ durationMinutes: 30 }],
  "session.snapshot": [{}],
  "sandbox.unexpose": [{ port: 3000 }],
  "image.build.cancel": [{}],
  "session.update": [
    { type: "profile", params: { persistChanges: true } },
    { type: "profile", params: { persistChanges: true, persistNetworkCache: false } },
    { type: "proxy", params: { enabled: true, staticIpId: "ip_1", location: { country: "US", state: "CA", city: "SF" } } },
    { type: "screen", params: { width: 1280, height: 720 } },
    { type: "solveCaptchas", params: { enabled: true, solverType: "visual" } },
    { type: "solveCaptchas", params: { enabled: false } },
  ],
};

const jsonRows = ROUTES.filter((r): r is RouteRow & { body: { kind: "json"; schema: z.ZodType } } => r.body.kind === "json");

/** Paths under an opaque value (a JSON schema, an output model) are data, not fields. */
function covered(declared: Map<string, string>, path: string): boolean {
  if (declared.has(path)) return true;
  const parts = path.split(".");
  for (let i = parts.length - 1; i > 0; i--) {
    const at = parts.slice(0, i).join(".");
    if (declared.get(at) === "unknown" || declared.get(at.replace(/\[\]$/, "")) === "unknown") return true;
  }
  return false;
}

describe("every row declares its body", () => {
  it("each JSON row is mapped to the SDK type it receives, or its inline body is listed", () => {
    // A row only the Python SDK calls (image.build.reuse) is mapped to its model in ./python-requests.ts.
    const unmapped = jsonRows.map((r) => r.name).filter((n) => !SDK_TYPE[n] && !INLINE_SDK_BODIES[n] && !PY_REQUEST[n]);
    expect(unmapped).toEqual([]);
  });

  it.each(Object.entries(SDK_TYPE))("%s declares every field of the Node SDK's type", (rowName, spec) => {
    const row = jsonRows.find((r) => r.name === rowName);
    expect(row, `${rowName} is a JSON row`).toBeDefined();
    const declared = declaredPaths(row!.body.schema);
    const rename = (p: string) => {
      const [head, ...rest] = p.split(".");
      return [spec.renames?.[head!] ?? head, ...rest].join(".");
    };
    const sdk = [...sdkFieldPaths(spec.type)].map(rename);
    expect(sdk.length, `${spec.type} was found in the SDK's types`).toBeGreaterThan(0);
    expect(sdk.filter((p) => !covered(declared, p))).toEqual([]);
  });

  it.each(Object.entries(INLINE_SDK_BODIES))("%s accepts the bodies the SDK builds inline", (rowName, bodies) => {
    const row = jsonRows.find((r) => r.name === rowName)!;
    for (const body of bodies) expect(bodyProblems(row.body.schema, body)).toEqual([]);
  });
});

describe("a body declaration", () => {
  it("finds every id a body names, wherever it sits", () => {
    const refs = namedRefs(createSessionBody, {
      profile: { id: "prof_1", persistChanges: true },
      extensionIds: ["ext_1", "ext_2"],
      startFromSnapshot: { snapshotId: "snap_1" },
    });
    expect(refs).toEqual([
      { path: "profile.id", kind: "profile", id: "prof_1" },
      { path: "extensionIds.0", kind: "extension", id: "ext_1" },
      { path: "extensionIds.1", kind: "extension", id: "ext_2" },
      { path: "startFromSnapshot.snapshotId", kind: "snapshot", id: "snap_1" },
    ]);
  });

  it("finds ids in records and nested options (a sandbox's mounts, a task's session options)", () => {
    const sandbox = jsonRows.find((r) => r.name === "sandbox.create")!.body.schema;
    expect(namedRefs(sandbox, { imageName: "node", mounts: { "/mnt/a": { id: "vol_a" }, "/mnt/b": { id: "vol_b", type: "ro" } } })).toEqual(
      [
        { path: "mounts./mnt/a.id", kind: "volume", id: "vol_a" },
        { path: "mounts./mnt/b.id", kind: "volume", id: "vol_b" },
      ],
    );
    const task = jsonRows.find((r) => r.name === "task.browser-use.start")!.body.schema;
    expect(namedRefs(task, { task: "t", sessionId: "ses_1", sessionOptions: { profile: { id: "prof_9" } } }).map((r) => r.path)).toEqual([
      "sessionId",
      "sessionOptions.profile.id",
    ]);
    const fetch = jsonRows.find((r) => r.name === "web.fetch")!.body.schema;
    expect(namedRefs(fetch, { url: "https://x", browser: { profileId: "prof_2" } })).toEqual([
      { path: "browser.profileId", kind: "profile", id: "prof_2" },
    ]);
  });

  it("answers the same on every walk (what a schema can hold is read once), and walks nothing that names no resource", () => {
    const sandbox = jsonRows.find((r) => r.name === "sandbox.create")!.body.schema;
    const body = { imageName: "node", mounts: { "/mnt/a": { id: "vol_a" } } };
    const first = namedRefs(sandbox, body);
    expect(first).toEqual([{ path: "mounts./mnt/a.id", kind: "volume", id: "vol_a" }]);
    for (let i = 0; i < 3; i++) expect(namedRefs(sandbox, body)).toEqual(first);
    const search = jsonRows.find((r) => r.name === "web.search")!.body.schema;
    expect(referenceFields(search)).toEqual([]);
    expect(namedRefs(search, { query: "vol_a", page: 1 })).toEqual([]);
  });

  it("refuses an undeclared field by its full path, nested ones too", () => {
    const sandbox = jsonRows.find((r) => r.name === "sandbox.create")!.body.schema;
    expect(bodyProblems(sandbox, { imageName: "node", mounts: { "/m": { id: "v", sneaky: 1 } }, extra: true })).toEqual([
      expect.objectContaining({ code: "unknown_field", field: "mounts./m.sneaky" }),
      expect.objectContaining({ code: "unknown_field", field: "extra" }),
    ]);
  });

  it.each([0, -1, 0.5, "1000", 10_001])("refuses maxPages %j: limits are integers in range, never coerced", (v) => {
    const crawl = jsonRows.find((r) => r.name === "crawl.start")!.body.schema;
    expect(bodyProblems(crawl, { url: "https://x", maxPages: v })).toEqual([
      expect.objectContaining({ code: "invalid_params", field: "maxPages" }),
    ]);
  });

  it("lists the fields that name resources, for the route table's rendering", () => {
    const sandbox = jsonRows.find((r) => r.name === "sandbox.create")!.body.schema;
    expect(referenceFields(sandbox)).toEqual([
      { path: "snapshotId", kind: "snapshot" },
      { path: "mounts.*.id", kind: "volume" },
    ]);
  });
});
