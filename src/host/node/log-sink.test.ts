// The batched stdout sink in a real child process: lines come out in order, soon when the gateway is idle, and all of
// them when the process exits right after writing.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const sink = fileURLToPath(new URL("./log-sink.ts", import.meta.url));

function run(script: string): { lines: () => string[]; firstLineAt: Promise<number>; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  const started = performance.now();
  const firstLineAt = new Promise<number>((resolve) => {
    child.stdout.once("data", () => resolve(performance.now() - started));
    child.once("close", () => resolve(Number.POSITIVE_INFINITY));
  });
  child.stdout.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  return { lines: () => out.split("\n").filter(Boolean), firstLineAt, exited };
}

describe("stdout log sink (batched)", () => {
  it("writes every line, in order, when the process exits right after", async () => {
    const p = run(`import { stdoutLogSink } from ${JSON.stringify(sink)};
      const log = stdoutLogSink();
      for (let i = 0; i < 5000; i++) log(JSON.stringify({ i }));
      process.exit(0);`);
    expect(await p.exited).toBe(0);
    const lines = p.lines();
    expect(lines).toHaveLength(5000);
    expect(lines.map((l) => JSON.parse(l).i)).toEqual([...Array(5000).keys()]);
  });

  it("writes every line, in order, when batches are in flight as the process exits (a few MB)", async () => {
    const p = run(`import { stdoutLogSink } from ${JSON.stringify(sink)};
      const log = stdoutLogSink();
      const pad = "x".repeat(150);
      for (let i = 0; i < 20000; i++) log(JSON.stringify({ i, pad }));
      setImmediate(() => process.exit(0)); // some batches written, one in flight, the rest still gathered`);
    expect(await p.exited).toBe(0);
    const lines = p.lines();
    expect(lines).toHaveLength(20000);
    expect(lines.every((l, i) => JSON.parse(l).i === i)).toBe(true);
  });

  it("never blocks on a reader that stops reading: lines past 16 MiB are dropped and said on stderr", async () => {
    // stdout is a shell pipe (blocking, unlike the pipes Node makes for its children) into a reader that never reads.
    const script = `import { stdoutLogSink } from ${JSON.stringify(sink)};
      const log = stdoutLogSink();
      process.on("exit", () => process.stderr.write("exited\\n"));
      const pad = "x".repeat(200);
      let i = 0;
      const t0 = Date.now();
      const more = () => {
        for (let k = 0; k < 20000; k++) log(JSON.stringify({ i: i++, pad }));
        if (i < 200000) setImmediate(more); // ~45 MB in all, the event loop turning between chunks
        else {
          process.stderr.write("wrote all in " + (Date.now() - t0) + " ms\\n");
          setTimeout(() => process.exit(0), 50);
        }
      };
      more();`;
    const child = spawn("sh", ["-c", `"${process.execPath}" --import tsx --input-type=module -e "$SCRIPT" | sleep 60`], {
      env: { ...process.env, SCRIPT: script },
      stdio: ["ignore", "ignore", "pipe"],
      detached: true,
    });
    let err = "";
    child.stderr!.on("data", (d) => (err += d));
    const deadline = Date.now() + 20_000;
    while (!err.includes("exited") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    process.kill(-child.pid!, "SIGKILL");
    const took = Number(/wrote all in (\d+) ms/.exec(err)?.[1]);
    expect(took, err).toBeLessThan(10_000); // a blocking write stops at the first full pipe, for good
    expect(err).toMatch(/stdout is not being read; \d+ log lines dropped so far/);
    expect(err).toContain("exited"); // the exit flush gave up on the reader (after 2 s) instead of waiting for good
  }, 30_000);

  it("writes a lone line within a few hundred ms while the process stays up", async () => {
    const p = run(`import { stdoutLogSink } from ${JSON.stringify(sink)};
      const log = stdoutLogSink();
      setTimeout(() => log('{"msg":"hello"}'), 50);
      setTimeout(() => process.exit(0), 3000);`);
    const at = await p.firstLineAt;
    expect(at).toBeLessThan(2500); // written by the periodic flush (100 ms), not at exit (3 s)
    await p.exited;
    expect(p.lines()).toEqual(['{"msg":"hello"}']);
  });
});
