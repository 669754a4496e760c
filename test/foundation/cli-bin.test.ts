// `tollgate` is a real bin (package.json "bin", an executable script with a shebang), and it starts fast: the CLI entry
// loads nothing but Node's own modules before it knows the command, so `--help` costs about what Node's own start
// does, and each command loads only what it uses. Examples run it as ./bin/tollgate.js (npx adds npm's start-up, 4–8 s
// on a loaded machine here).
import { execFile } from "node:child_process";
import { accessSync, constants, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");
const run = promisify(execFile);

describe("the tollgate bin", () => {
  it("is package.json's bin: an executable script with a node shebang", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { bin: Record<string, string> };
    expect(pkg.bin).toEqual({ tollgate: "bin/tollgate.js" });
    const bin = join(ROOT, pkg.bin.tollgate!);
    accessSync(bin, constants.X_OK);
    expect(readFileSync(bin, "utf8").split("\n")[0]).toBe("#!/usr/bin/env node");
  });

  it("imports nothing but node: builtins statically in the CLI entry; commands load their modules when they run", () => {
    const src = readFileSync(join(ROOT, "src/cli/index.ts"), "utf8");
    const statics = [...src.matchAll(/^import\s+(?!type\b)[^;]*?from\s+"([^"]+)";/gms)].map((m) => m[1]);
    expect(statics.length).toBeGreaterThan(0);
    expect(statics.filter((s) => !s!.startsWith("node:"))).toEqual([]);
  });

  it("answers --help and an unknown command without loading the config schema", async () => {
    const help = await run(process.execPath, ["--import", "tsx", "src/cli/index.ts", "--help"], { cwd: ROOT });
    expect(help.stdout).toContain("tollgate usage export [--from DATE]       spend by tenant, day, kind and route row\n");
    expect(help.stdout).toContain("                        [--to DATE (that day included)] [--format csv|json]\n");
    const bad = await run(process.execPath, ["--import", "tsx", "src/cli/index.ts", "nope"], { cwd: ROOT }).catch((e) => e);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("unknown command: nope");
    // A command's own error is still a plain message (the error classes are known by name, not loaded up front).
    const cfg = await run(process.execPath, ["--import", "tsx", "src/cli/index.ts", "config", "check", "/nonexistent.toml"], {
      cwd: ROOT,
    }).catch((e) => e);
    expect(cfg.code).toBe(1);
    expect(cfg.stderr).not.toMatch(/^\s+at /m);
  }, 60_000);

  it("--help sets each description under its own command, never alone between two commands", async () => {
    const { stdout } = await run(process.execPath, ["--import", "tsx", "src/cli/index.ts", "--help"], { cwd: ROOT });
    const lines = stdout.split("\n");
    const lineOf = (text: string) => lines.find((l) => l.includes(text)) ?? "";
    // A command too long for the description column keeps its description on its first line and wraps its flags.
    expect(lineOf("prints a key and the hash line")).toMatch(/^ {2}tollgate keys create --tenant ID +offline: /);
    expect(lineOf("the route table")).toMatch(/^ {2}tollgate routes +the route table/);
    expect(lineOf("made inside a PKCS#11 token")).toMatch(/^ {2}tollgate signer keygen /);
    expect(lineOf("spend by tenant, day")).toMatch(/^ {2}tollgate usage export /);
    // The rule for every line: an indented line that is neither a command nor its flags continues a description, so
    // the line above it carries one (text, three spaces or more, text).
    const described = /\S {3,}\S/;
    const strays = lines.filter((l, i) => {
      const t = l.trim();
      if (!l.startsWith("  ") || !t || /^(tollgate |\[|-|\()/.test(t)) return false;
      return !described.test(lines[i - 1] ?? "");
    });
    expect(strays).toEqual([]);
  }, 60_000);

  it.skipIf(!existsSync(join(ROOT, "dist/src/cli/index.js")))(
    "starts about as fast as Node itself (compiled build)",
    async () => {
      const time = async (args: string[]) => {
        const best: number[] = [];
        for (let i = 0; i < 3; i++) {
          const t0 = performance.now();
          await run(process.execPath, args, { cwd: ROOT });
          best.push(performance.now() - t0);
        }
        return Math.min(...best);
      };
      const node = await time(["-e", ""]);
      const help = await time(["bin/tollgate.js", "--help"]);
      console.log(`[cli] node -e "": ${node.toFixed(0)} ms; node bin/tollgate.js --help: ${help.toFixed(0)} ms`);
      // Node's start plus a few modules of its own; loading the config schema (zod) alone used to add over a second.
      expect(help).toBeLessThan(node + 400);
    },
    60_000,
  );
});
