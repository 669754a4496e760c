// What `tollgate dev` (`npm start`) shows a person: the banner on stdout with the console, the Requests page and
// commands to try; the demo keys last, on one line of their own ("tollgate demo keys: …") that the request log (on
// stderr) never interleaves with, and again on SIGUSR2. The `--worker` banner names the console and the same examples.
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { demoKeysLine, devBanner } from "../../src/cli/banner.js";

describe("`tollgate dev`'s banner", () => {
  it("ends with the demo keys on a line of their own, keeps the request log off stdout, and prints the keys again on SIGUSR2", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/cli/index.ts", "dev", "--port", "0"], {
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    const waitFor = (re: RegExp, what: string, ms: number) =>
      new Promise<RegExpMatchArray>((resolve, reject) => {
        const t = setTimeout(
          () => reject(new Error(`${what} not seen in ${ms} ms; stdout: ${out.slice(-500)} stderr: ${err.slice(-500)}`)),
          ms,
        );
        const check = () => {
          const m = out.match(re);
          if (m) {
            clearTimeout(t);
            child.stdout.off("data", check);
            resolve(m);
          }
        };
        child.stdout.on("data", check);
        check();
      });
    try {
      const [line] = await waitFor(/^tollgate demo keys: .*$/m, "the keys line", 90_000);
      // The last line of the start-up output.
      expect(out.trimEnd().split("\n").at(-1)).toBe(line);
      const keys = Object.fromEntries(
        line!
          .slice("tollgate demo keys: ".length)
          .split(" ")
          .map((kv) => kv.split("=")) as [string, string][],
      );
      expect(Object.keys(keys)).toEqual(["acme", "initech", "globex", "ops"]);
      const gateway = /^ {2}gateway {3}(\S+)$/m.exec(out)![1]!;
      expect(out).toContain(`${gateway}/_tollgate/console`);
      expect(out).toContain(`${gateway}/_tollgate/console/requests`);
      expect(out).toContain(`./bin/tollgate.js tenants list --gateway ${gateway} --admin-key ${keys.ops}`);
      expect(out).not.toContain("npx tollgate");
      // A request: its log line goes to stderr, never between the banner's lines.
      const r = await fetch(`${gateway}/_tollgate/whoami`, { headers: { "x-api-key": keys.acme! } });
      expect(r.status).toBe(200);
      const before = out.length;
      for (let i = 0; i < 50 && !err.includes('"path":"/_tollgate/whoami"'); i++) await new Promise((res) => setTimeout(res, 100));
      expect(err).toContain('"path":"/_tollgate/whoami"');
      expect(out.length).toBe(before);
      // On demand.
      process.kill(child.pid!, "SIGUSR2");
      await waitFor(
        new RegExp(`${line!.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\n[^]*${line!.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`),
        "the keys again",
        10_000,
      );
      process.kill(child.pid!, "SIGINT");
      expect(await Promise.race([exited, new Promise((r) => setTimeout(() => r("timeout"), 20_000))])).toBe(0);
    } finally {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        /* gone */
      }
    }
  }, 150_000);

  it("for --worker names the console, the Requests page and the same examples", () => {
    const tenants = { acme: "tg_acme_x", initech: "tg_initech_y", globex: "tg_globex_z", ops: "tg_ops_w" };
    const text = devBanner({
      gateway: "http://127.0.0.1:8788",
      upstream: "http://127.0.0.1:9000",
      chain: null,
      tenants,
      worker: true,
      pid: 42,
    });
    expect(text).toContain("as the Worker under `wrangler dev`");
    expect(text).toContain("console   http://127.0.0.1:8788/_tollgate/console");
    expect(text).toContain("curl -s http://127.0.0.1:8788/x402/web/search -H 'x-api-key: tg_acme_x'");
    expect(text).toContain("./bin/tollgate.js tenants list --gateway http://127.0.0.1:8788 --admin-key tg_ops_w");
    expect(text).toContain("kill -USR2 42");
    expect(text.trimEnd().split("\n").at(-1)).toBe(demoKeysLine(tenants));
  });
});
