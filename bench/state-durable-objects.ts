// The Durable Object section of `npm run bench -- state`: the Worker bundled by wrangler (offline dry run) with
// bench/state-durable-objects-worker.ts as its entry, run in workerd through Miniflare (127.0.0.1, port 0, its
// TollgateState SQLite-backed as deployed), measures each request class against the bench's emulator with the harness
// the workerd test uses (test/helpers/durable-round-trips.ts). Optional: when wrangler, Miniflare or workerd is not
// there, the section says why and is skipped; the bench goes on either way.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClassFigure, RoundTripStack } from "../test/helpers/durable-round-trips.js";

const ENTRY = "bench/state-durable-objects-worker.ts";
/** Bundling takes 20–40 s on a loaded 2-core machine; measuring every class about 15 s. */
const BUILD_MS = 180_000;
const MEASURE_MS = 300_000;

export type DurableObjectSection = { figures: ClassFigure[] } | { skipped: string } | { failed: string };

const firstLine = (err: unknown) =>
  (err instanceof Error ? err.message : String(err))
    .split("\n")
    .find((l) => l.trim())
    ?.trim() ?? "unknown error";

/** Per class: Durable Object calls waited for and made, `runs` requests at each delay (the paid miss two more). */
export async function durableObjectSection(stack: RoundTripStack, runs: number): Promise<DurableObjectSection> {
  let Miniflare: typeof import("miniflare").Miniflare;
  try {
    ({ Miniflare } = await import("miniflare"));
  } catch (err) {
    return { skipped: `miniflare could not be loaded (${firstLine(err)})` };
  }
  const dir = mkdtempSync(join(tmpdir(), "tollgate-state-do-"));
  try {
    try {
      execFileSync("npx", ["wrangler", "deploy", "--dry-run", "--outdir", dir, ENTRY], {
        env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" },
        stdio: ["ignore", "ignore", "pipe"],
        timeout: BUILD_MS,
      });
    } catch (err) {
      const stderr = String((err as { stderr?: Buffer }).stderr ?? "");
      return { skipped: `wrangler could not bundle ${ENTRY} (${firstLine(/ERROR.*$/m.exec(stderr)?.[0] ?? err)})` };
    }
    const compatibilityDate = /compatibility_date\s*=\s*"([^"]+)"/.exec(readFileSync("wrangler.toml", "utf8"))![1]!;
    let mf: InstanceType<typeof Miniflare> | undefined;
    try {
      try {
        mf = new Miniflare({
          host: "127.0.0.1",
          port: 0,
          modules: true,
          modulesRoot: dir,
          scriptPath: join(dir, "state-durable-objects-worker.js"),
          compatibilityDate,
          durableObjects: { TOLLGATE_STATE: { className: "TollgateState", useSQLite: true } },
        });
        await mf.ready;
      } catch (err) {
        return { skipped: `workerd did not start (${firstLine(err)})` };
      }
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${MEASURE_MS / 1000} s`)), MEASURE_MS);
      });
      try {
        const res = await Promise.race([
          mf.dispatchFetch("http://127.0.0.1/", { method: "POST", body: JSON.stringify({ ...stack, runs }) }),
          timeout,
        ]);
        const text = await res.text();
        if (res.status !== 200) return { failed: text.replace(/\s+/g, " ").slice(0, 400) };
        return { figures: JSON.parse(text) as ClassFigure[] };
      } catch (err) {
        return { failed: firstLine(err) };
      } finally {
        clearTimeout(timer);
      }
    } finally {
      await mf?.dispose().catch(() => {}); // stops the workerd process it started
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
