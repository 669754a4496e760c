// Both official SDKs' declarations, checked: each SDK as installed (Node) or as its snapshot (Python, in shared/) is
// read from its own source and compared with the reading recorded in test/fixtures/sdk-declarations.json, so a new
// field, a removed one or a changed type in either SDK fails here by name; and every field either SDK's request models
// send is declared by the row that takes it. Moving an SDK: docs/sdk-drift.md.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type * as z from "zod";
import { declaredPaths } from "../../src/routing/bodies/declare.js";
import { ROUTES, type RouteRow } from "../../src/routing/table.js";
import { pythonSdkDir } from "../helpers/python-sdk.js";
import * as fixtures from "../fixtures/sdk-models.js";
import { PY_REQUEST } from "./python-requests.js";
import { drift, fieldPaths, readNodeSdk, readPythonSdk, type SdkReading } from "./sdk-declarations.js";

const LOCK = join(process.cwd(), "test/fixtures/sdk-declarations.json");
const NODE_SDK = join(process.cwd(), "node_modules/@hyperbrowser/sdk");

const python = readPythonSdk(pythonSdkDir());
const node = readNodeSdk(NODE_SDK);
if (process.env.TOLLGATE_SDK_LOCK === "write") writeFileSync(LOCK, `${JSON.stringify({ python, node }, null, 1)}\n`);
const lock = JSON.parse(readFileSync(LOCK, "utf8")) as { python: SdkReading; node: SdkReading };

const jsonRows = ROUTES.filter((r): r is RouteRow & { body: { kind: "json"; schema: z.ZodType } } => r.body.kind === "json");

/** Paths a row's body does not declare (a path under an opaque value is data, not a field). */
function undeclared(rowName: string, paths: string[]): string[] {
  const row = jsonRows.find((r) => r.name === rowName);
  if (!row) return [`${rowName} is not a JSON row`];
  const declared = declaredPaths(row.body.schema);
  const covered = (path: string) => {
    if (declared.has(path)) return true;
    const parts = path.split(".");
    for (let i = parts.length - 1; i > 0; i--) {
      const at = parts.slice(0, i).join(".");
      if (declared.get(at) === "unknown" || declared.get(at.replace(/\[\]$/, "")) === "unknown") return true;
    }
    return false;
  };
  return paths.filter((p) => !covered(p));
}

const temps: string[] = [];
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), "sdk-drift-"));
  temps.push(d);
  return d;
};

describe("the SDKs' declarations, as recorded", () => {
  it(`the Python SDK (${python.version}) declares what was recorded, model by model, field by field`, () => {
    expect(python.version).toBe(lock.python.version);
    expect(Object.keys(python.models).length).toBeGreaterThan(200);
    expect(drift("python", lock.python.models, python.models)).toEqual([]);
  });

  it(`the Node SDK (${node.version}) declares what was recorded, type by type, field by field`, () => {
    expect(node.version).toBe(lock.node.version);
    expect(Object.keys(node.models).length).toBeGreaterThan(100);
    expect(drift("node", lock.node.models, node.models)).toEqual([]);
  });

  it("reads wire names as the SDKs send them: aliases, nested models, lists and maps", () => {
    expect(python.models.CreateSandboxImageBuildParams).toEqual(
      expect.arrayContaining([
        "imageName: str",
        "dockerfilePath?: str|null",
        "contextManifest.bundles[].sha256: str",
        "imageInit.workingDir?: str|null",
        "imageInit.env.*: str",
        "inputFormat?: enum(docker_image_manifest_v1|dockerfile_context_manifest_v1|dockerfile_context_tar_gz|rootfs_export_tar_gz)|null",
      ]),
    );
    expect(python.models.TeamCreditInfo).toEqual(["usage: int", "limit: int", "remaining: int"]);
    expect(node.models.CreateSandboxImageBuildParams).toEqual(expect.arrayContaining(["imageName: str", "imageInit.env.*: str"]));
  });
});

describe("every field the Python SDK's request models send is declared by the row", () => {
  it.each(Object.entries(PY_REQUEST))("%s declares every field of %s", (rowName, model) => {
    const paths = fieldPaths(python.models, model);
    expect(paths.length, `${model} was found in the Python SDK`).toBeGreaterThan(0);
    expect(undeclared(rowName, paths)).toEqual([]);
  });
});

describe("a field planted in either SDK is caught by name", () => {
  it("python: a new field in a copy of the models is reported, and the row does not declare it", () => {
    const dir = temp();
    const src = pythonSdkDir();
    cpSync(join(src, "hyperbrowser/models"), join(dir, "hyperbrowser/models"), { recursive: true });
    cpSync(join(src, "pyproject.toml"), join(dir, "pyproject.toml"));
    const file = join(dir, "hyperbrowser/models/sandbox.py");
    const text = readFileSync(file, "utf8");
    const anchor = "class CreateSandboxImageBuildParams(SandboxBaseModel):\n";
    expect(text).toContain(anchor);
    writeFileSync(
      file,
      text.replace(anchor, `${anchor}    planted_field: Optional[str] = Field(default=None, serialization_alias="plantedField")\n`),
    );
    const planted = readPythonSdk(dir);
    expect(drift("python", lock.python.models, planted.models)).toEqual([
      "python CreateSandboxImageBuildParams: new field plantedField?: str|null",
    ]);
    expect(undeclared("image.build.create", fieldPaths(planted.models, "CreateSandboxImageBuildParams"))).toEqual(["plantedField"]);
  });

  it("python: a changed type (an integer answer field made a float) is reported", () => {
    const dir = temp();
    const src = pythonSdkDir();
    cpSync(join(src, "hyperbrowser/models"), join(dir, "hyperbrowser/models"), { recursive: true });
    cpSync(join(src, "pyproject.toml"), join(dir, "pyproject.toml"));
    const file = join(dir, "hyperbrowser/models/team.py");
    writeFileSync(file, readFileSync(file, "utf8").replace('usage: int = Field(alias="usage")', 'usage: float = Field(alias="usage")'));
    expect(drift("python", lock.python.models, readPythonSdk(dir).models)).toEqual([
      "python TeamCreditInfo: field changed usage: int → usage: float",
    ]);
  });

  it("node: a new field in a copy of the types is reported, and the row does not declare it", () => {
    const dir = temp();
    cpSync(join(NODE_SDK, "dist/types"), join(dir, "dist/types"), { recursive: true });
    cpSync(join(NODE_SDK, "package.json"), join(dir, "package.json"));
    const file = join(dir, "dist/types/sandbox.d.ts");
    const text = readFileSync(file, "utf8");
    const anchor = "export interface CreateSandboxImageBuildParams {\n";
    expect(text).toContain(anchor);
    writeFileSync(file, text.replace(anchor, `${anchor}    plantedField?: string;\n`));
    const planted = readNodeSdk(dir);
    expect(drift("node", lock.node.models, planted.models)).toEqual(["node CreateSandboxImageBuildParams: new field plantedField?: str"]);
    expect(undeclared("image.build.create", fieldPaths(planted.models, "CreateSandboxImageBuildParams"))).toEqual(["plantedField"]);
  });
});

describe("the answer shapes the tests parse with (test/fixtures/sdk-models.ts) are the SDKs' own", () => {
  /** Fixture name → the SDK's model or type of that answer where the name differs ("": none, a parser's own shape). */
  const PY_NAME: Record<string, string> = { ExtensionList: "" };
  const NODE_NAME: Record<string, string> = { ExtensionList: "" };

  it.each(Object.keys(fixtures.python))("python %s: every field the fixture names is the SDK model's", (name) => {
    const model = PY_NAME[name] ?? name;
    if (!model) return;
    const sdk = new Set(fieldPaths(python.models, model));
    expect(sdk.size, `${model} is a model of the Python SDK`).toBeGreaterThan(0);
    expect([...declaredPaths(fixtures.python[name as keyof typeof fixtures.python]).keys()].filter((p) => !sdk.has(p))).toEqual([]);
  });

  it.each(Object.keys(fixtures.node))("node %s: every field the fixture names is the SDK type's", (name) => {
    const model = NODE_NAME[name] ?? name;
    if (!model) return;
    const sdk = new Set(fieldPaths(node.models, model));
    expect(sdk.size, `${model} is a type of the Node SDK`).toBeGreaterThan(0);
    expect([...declaredPaths(fixtures.node[name as keyof typeof fixtures.node]).keys()].filter((p) => !sdk.has(p))).toEqual([]);
  });
});
