// Upgrades start from knowing the version (issue 54): `tollgate --version` prints the package's version, the one
// /_tollgate/health and tollgate_build_info carry; the changelog and docs/upgrading.md exist and link each other;
// `tollgate emulator --help` answers instead of refusing an unknown option.
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { VERSION } from "../../src/operators/version.js";

const run = promisify(execFile);
const CLI = ["--import", "tsx", "src/cli/index.ts"];

describe("versions", () => {
  it("`tollgate --version` prints the package's version, which the gateway reports", async () => {
    const pkg = JSON.parse(await readFile("package.json", "utf8")) as { version: string };
    expect(VERSION).toBe(pkg.version);
    const { stdout } = await run(process.execPath, [...CLI, "--version"]);
    expect(stdout).toBe(`tollgate ${pkg.version}\n`);
  });

  it("keeps a changelog by release, breaking changes marked, and an upgrade guide", async () => {
    const changelog = await readFile("CHANGELOG.md", "utf8");
    expect(changelog).toMatch(/^## Unreleased/m);
    expect(changelog).toContain("**Breaking:**");
    expect(changelog).toContain("docs/upgrading.md");
    const upgrading = await readFile("docs/upgrading.md", "utf8");
    for (const section of ["## Config compatibility", "## State layout versions", "## Mixed-version fleets"])
      expect(upgrading).toContain(section);
  });

  it("`tollgate emulator --help` prints its usage", async () => {
    const { stdout } = await run(process.execPath, [...CLI, "emulator", "--help"]);
    expect(stdout).toMatch(/^tollgate emulator \[--json\]/);
  });
});
