// A few files written to a scratch tree shaped like the repo, cruised by dependency-cruiser with the repo's own rules
// (as `npm run lint:boundaries` does): what the boundary tests plant a violation in (floors, money, the operator wing).
import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";

const ROOT = process.cwd();

export interface PlantedViolation {
  from: string;
  to: string;
  rule: string;
}

/** Writes `files` under `root` and cruises src/ (and middleware/ when a file sits there): the rules broken, per import. */
export async function cruisePlanted(root: string, files: Record<string, string>): Promise<PlantedViolation[]> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), text);
  }
  await writeFile(join(root, "tsconfig.json"), JSON.stringify({ compilerOptions: { module: "nodenext", moduleResolution: "nodenext" } }));
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      "--import",
      join(ROOT, "scripts/depcruise-typescript.mjs"),
      join(ROOT, "node_modules/dependency-cruiser/bin/dependency-cruise.mjs"),
      "--config",
      join(ROOT, ".dependency-cruiser.cjs"),
      "--output-type",
      "json",
      "--no-progress",
      "src",
      ...(Object.keys(files).some((f) => f.startsWith("middleware/")) ? ["middleware"] : []),
    ],
    { cwd: root, maxBuffer: 16 * 1024 * 1024 },
  ).catch((err) => err as { stdout: string }); // exit code 1 when a rule is broken: the report is still on stdout
  const report = JSON.parse(stdout) as { summary: { violations: Array<{ from: string; to: string; rule: { name: string } }> } };
  return report.summary.violations.filter((v) => v.rule.name !== "no-orphans").map((v) => ({ from: v.from, to: v.to, rule: v.rule.name }));
}
