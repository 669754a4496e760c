import { describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

describe("Workers bundle", () => {
  it("builds offline with `wrangler deploy --dry-run`, minified, at most 440 KiB gzip", async () => {
    const out = await mkdtemp(join(tmpdir(), "tg-worker-"));
    const { stdout, stderr } = await run("npx", ["wrangler", "deploy", "--dry-run", "--outdir", out], {
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" },
      timeout: 120_000,
    });
    const text = stdout + stderr;
    const m = text.match(/Total Upload:\s*([\d.]+) KiB \/ gzip:\s*([\d.]+) KiB/);
    expect(m, text).not.toBeNull();
    console.log(`[worker bundle] total ${m![1]} KiB, gzip ${m![2]} KiB`);
    // Issue 16 set 300 KiB; the MCP endpoint (issue 29) brings @modelcontextprotocol/sdk and its ajv (~90 KiB gzip).
    // The OAuth authorization server, agent policies and the OIDC client (oauth4webapi, ~12 KiB gzip) bring it to
    // ~425 KiB. Workers allow 3 MiB gzip on the free plan; the way back under 300 KiB (operator-only parts loaded when
    // first asked for) is open work.
    expect(Number(m![2])).toBeLessThanOrEqual(440);
    expect((await readdir(out)).some((f) => f.endsWith(".js"))).toBe(true);
    await rm(out, { recursive: true, force: true });
  }, 180_000);
});
