// Runtime plane of the sandbox emulator through the unmodified SDK: processes, SSE, files, watches, presigned URLs, PTYs.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "undici";
import { startSandboxHarness, type SandboxHandle, type SandboxHarness } from "./sandboxes-harness.js";

let h: SandboxHarness;
let sbx: SandboxHandle;
beforeAll(async () => {
  h = await startSandboxHarness();
  sbx = await h.hb.sandboxes.create({ imageName: "node" });
});
afterAll(async () => h?.close());

const raw = (url: string, init: Parameters<typeof request>[1] = {}) => request(url.replace("localhost", "127.0.0.1"), init);

describe("processes", () => {
  it("execs a command as the non-root user, returning a non-zero exit without an HTTP error", async () => {
    const r = await sbx.exec("id -un; pwd; echo oops >&2; exit 3", { env: { FOO: "bar" } });
    expect(r).toMatchObject({ status: "exited", exitCode: 3, stdout: "ubuntu\n/home/ubuntu\n", stderr: "oops\n" });
    expect((await sbx.exec("echo $FOO", { env: { FOO: "bar" }, cwd: "/tmp" })).stdout).toBe("bar\n");
    expect((await sbx.exec("sleep 5", { timeoutMs: 200 })).status).toBe("timed_out");
  });

  it("starts, gets, lists with cursor and time filters, waits (408 on timeout), signals and kills", async () => {
    const since = Date.now();
    const p = await sbx.processes.start("sleep 30");
    expect(p.status).toBe("running");
    expect((await sbx.getProcess(p.id)).toJSON()).toMatchObject({ id: p.id, status: "running", command: "sleep 30" });
    await expect(p.wait({ timeoutMs: 100 })).rejects.toMatchObject({ statusCode: 408 });
    const q = await sbx.processes.start("echo quick");
    await q.wait();
    const page1 = await sbx.processes.list({ limit: 1, createdAfter: since });
    expect(page1.data).toHaveLength(1);
    expect(page1.nextCursor).toBeDefined();
    const page2 = await sbx.processes.list({ limit: 1, cursor: page1.nextCursor, createdAfter: since });
    expect(page2.data[0]!.id).not.toBe(page1.data[0]!.id);
    expect((await sbx.processes.list({ status: "running", createdAfter: since })).data.map((x: { id: string }) => x.id)).toEqual([p.id]);
    expect((await sbx.processes.list({ createdBefore: since - 1 })).data.map((x: { id: string }) => x.id)).not.toContain(p.id);
    await p.signal("TERM");
    expect((await p.wait({ timeoutMs: 5000 })).status).toBe("killed");
    const k = await sbx.processes.start("sleep 30");
    expect((await k.kill()).status).toBe("killed");
    await expect(sbx.getProcess("proc_missing")).rejects.toMatchObject({ statusCode: 404 });
  });

  it("feeds stdin and closes it", async () => {
    const p = await sbx.processes.start("cat | tr a-z A-Z");
    await p.writeStdin("hello ");
    await p.writeStdin({ data: new TextEncoder().encode("world"), eof: true });
    expect((await p.wait({ timeoutMs: 5000 })).stdout).toBe("HELLO WORLD");
  });

  it("streams output over SSE, replays from_seq, and answers 410 once the replay window is gone", async () => {
    const p = await sbx.processes.start("for i in 1 2 3; do echo line$i; sleep 0.05; done; echo err >&2");
    const events: any[] = [];
    for await (const e of p.stream()) events.push(e);
    const out = events
      .filter((e) => e.type === "stdout")
      .map((e) => e.data)
      .join("");
    expect(out).toBe("line1\nline2\nline3\n");
    expect(events.some((e) => e.type === "stderr" && e.data === "err\n")).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: "exit", result: { exitCode: 0 } });
    const seqs = events.filter((e) => e.type !== "exit").map((e) => e.seq);
    const replay: any[] = [];
    for await (const e of p.stream(seqs[2])) replay.push(e);
    expect(replay.filter((e) => e.type !== "exit").map((e) => e.seq)).toEqual(seqs.slice(2));
    const big = await sbx.processes.start("head -c 3000000 /dev/zero | tr '\\0' a");
    await big.wait({ timeoutMs: 10_000 });
    const consume = async () => {
      for await (const _ of big.stream(1)) void _;
    };
    await expect(consume()).rejects.toMatchObject({ statusCode: 410, code: "replay_window_expired" });
  });
});

describe("files", () => {
  it("writes (single, batch, append, mode), reads with offset/length/encoding, stats and lists with depth", async () => {
    await sbx.files.writeText("/home/ubuntu/dir/a.txt", "hello");
    await sbx.files.writeText("/home/ubuntu/dir/a.txt", " world", { append: true });
    await sbx.files.write([
      { path: "/home/ubuntu/dir/sub/b.bin", data: Buffer.from([0, 1, 2, 255]) },
      { path: "/home/ubuntu/dir/run.sh", data: "#!/bin/sh\necho ran\n", mode: "755" },
    ]);
    expect(await sbx.files.readText("/home/ubuntu/dir/a.txt")).toBe("hello world");
    expect(await sbx.files.readText("/home/ubuntu/dir/a.txt", { offset: 6, length: 3 })).toBe("wor");
    expect([...(await sbx.files.readBytes("/home/ubuntu/dir/sub/b.bin"))]).toEqual([0, 1, 2, 255]);
    expect((await sbx.exec("/home/ubuntu/dir/run.sh")).stdout).toBe("ran\n");
    const info = await sbx.files.getInfo("/home/ubuntu/dir/run.sh");
    expect(info).toMatchObject({ type: "file", mode: 0o755, permissions: "-rwxr-xr-x", owner: "ubuntu", size: 19 });
    expect(await sbx.files.exists("/home/ubuntu/nope")).toBe(false);
    const shallow = await sbx.files.list("/home/ubuntu/dir");
    expect(shallow.map((e) => e.name).sort()).toEqual(["a.txt", "run.sh", "sub"]);
    const deep = await sbx.files.list("/home/ubuntu/dir", { depth: 2 });
    expect(deep.map((e) => e.name)).toContain("b.bin");
    await expect(sbx.files.readText("/home/ubuntu/missing")).rejects.toMatchObject({ statusCode: 404 });
  });

  it("makes dirs, moves, copies, chmods, refuses chown to another user with 400, and deletes", async () => {
    expect(await sbx.files.makeDir("/home/ubuntu/m/n", { parents: true })).toBe(true);
    expect(await sbx.files.makeDir("/home/ubuntu/m/n")).toBe(false);
    await sbx.files.writeText("/home/ubuntu/m/n/f.txt", "x");
    expect((await sbx.files.rename("/home/ubuntu/m/n/f.txt", "/home/ubuntu/m/g.txt")).name).toBe("g.txt");
    expect((await sbx.files.copy({ source: "/home/ubuntu/m", destination: "/home/ubuntu/m2", recursive: true })).type).toBe("dir");
    expect(await sbx.files.readText("/home/ubuntu/m2/g.txt")).toBe("x");
    await sbx.files.chmod({ path: "/home/ubuntu/m2/g.txt", mode: "600" });
    expect((await sbx.files.getInfo("/home/ubuntu/m2/g.txt")).permissions).toBe("-rw-------");
    await sbx.files.chown({ path: "/home/ubuntu/m2/g.txt", uid: 1000, gid: 1000 });
    await expect(sbx.files.chown({ path: "/home/ubuntu/m2/g.txt", uid: 0 })).rejects.toMatchObject({ statusCode: 400 });
    await sbx.files.remove("/home/ubuntu/m2", { recursive: true });
    await sbx.files.remove("/home/ubuntu/m2", { recursive: true }); // idempotent
    expect(await sbx.files.exists("/home/ubuntu/m2")).toBe(false);
  });

  it("uploads and downloads raw bodies", async () => {
    const big = Buffer.alloc(4 * 1024 * 1024, 7);
    expect(await sbx.files.upload("/home/ubuntu/up.bin", big)).toEqual({ path: "/home/ubuntu/up.bin", bytesWritten: big.length });
    const back = await sbx.files.download("/home/ubuntu/up.bin");
    expect(back.length).toBe(big.length);
    expect(Buffer.compare(back, big)).toBe(0);
  });

  it("watches a directory and delivers events over the WebSocket", async () => {
    await sbx.files.makeDir("/home/ubuntu/w");
    const events: Array<{ type: string; name: string }> = [];
    const watch = await sbx.files.watchDir("/home/ubuntu/w", (e) => void events.push(e), { recursive: true });
    await new Promise((r) => setTimeout(r, 150));
    await sbx.files.writeText("/home/ubuntu/w/new.txt", "1");
    await sbx.exec("rm /home/ubuntu/w/new.txt");
    for (let i = 0; i < 50 && !events.some((e) => e.type === "remove"); i++) await new Promise((r) => setTimeout(r, 50));
    await watch.stop();
    expect(events).toEqual(
      expect.arrayContaining([
        { type: "create", name: "new.txt" },
        { type: "remove", name: "new.txt" },
      ]),
    );
    await sbx.files.writeText("/home/ubuntu/plain", "x");
    await expect(sbx.files.watchDir("/home/ubuntu/plain", () => {})).rejects.toMatchObject({ statusCode: 400 });
    await expect(sbx.files.watchDir("/home/ubuntu/absent", () => {})).rejects.toMatchObject({ statusCode: 404 });
  });

  it("serves presigned upload/download URLs without Authorization, honouring expiry and one-time use", async () => {
    const up = await sbx.files.uploadUrl("/home/ubuntu/pre.txt", { oneTime: true });
    expect(up.method).toBe("PUT");
    const put = await raw(up.url, { method: "PUT", body: "presigned!" });
    expect(put.statusCode).toBe(200);
    await put.body.dump();
    const again = await raw(up.url, { method: "PUT", body: "twice" });
    expect(again.statusCode).toBe(401);
    await again.body.dump();
    const down = await sbx.files.downloadUrl("/home/ubuntu/pre.txt", { oneTime: true });
    const [a, b] = await Promise.all([raw(down.url), raw(down.url)]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([200, 401]);
    expect([await a.body.text(), await b.body.text()]).toContain("presigned!");
    const short = await sbx.files.downloadUrl("/home/ubuntu/pre.txt", { expiresInSeconds: 1 });
    await new Promise((r) => setTimeout(r, 1100));
    const late = await raw(short.url);
    expect(late.statusCode).toBe(401);
    await late.body.dump();
  });
});

describe("terminals", () => {
  it("runs a real PTY: attach over WebSocket with base64 output, input, resize, buffered output, wait, kill", async () => {
    const t = await sbx.terminal.create({ command: "bash", args: ["--norc", "--noprofile"], rows: 24, cols: 80 });
    expect(t.current).toMatchObject({ running: true, rows: 24, cols: 80 });
    const conn = await t.attach();
    let seen = "";
    let lastSeq = 0;
    const reader = (async () => {
      for await (const e of conn.events()) {
        if (e.type === "output") {
          seen += e.data;
          lastSeq = e.seq;
        }
      }
    })();
    // Type only once the shell shows its prompt, as a person would.
    for (let i = 0; i < 200 && !seen.includes("$ "); i++) await new Promise((r) => setTimeout(r, 50));
    await conn.write("echo pty-$((6*7)); [ -t 0 ] && echo is-a-tty\r");
    for (let i = 0; i < 200 && !seen.includes("is-a-tty\r\n"); i++) await new Promise((r) => setTimeout(r, 50));
    expect(seen).toContain("pty-42");
    expect(seen).toContain("is-a-tty\r\n");
    await conn.resize(40, 120);
    await new Promise((r) => setTimeout(r, 100));
    expect((await t.refresh()).current).toMatchObject({ rows: 40, cols: 120 });
    expect((await t.resize(30, 100)).rows).toBe(30);
    const withOutput = await sbx.terminal.get(t.id, true);
    expect(Buffer.concat(withOutput.current.output!.map((c) => c.raw)).toString()).toContain("pty-42");
    const resumed = await t.attach(lastSeq);
    await conn.close();
    await reader;
    await expect(t.wait({ timeoutMs: 100 })).rejects.toMatchObject({ statusCode: 408 });
    const resumedEvents: string[] = [];
    const r2 = (async () => {
      for await (const e of resumed.events()) resumedEvents.push(e.type);
    })();
    const final = await t.kill();
    expect(final.running).toBe(false);
    await r2;
    expect(resumedEvents.at(-1)).toBe("exit");
    const done = await sbx.terminal.create({ command: "echo", args: ["bye"] });
    expect((await done.wait({ timeoutMs: 5000, includeOutput: true })).exitCode).toBe(0);
  });
});

describe("runtime tokens", () => {
  it("refuses a missing or forged token with 401 JSON", async () => {
    const base = sbx.runtime.baseUrl.replace("localhost", "127.0.0.1");
    const none = await request(`${base}/processes`);
    expect(none.statusCode).toBe(401);
    expect(await none.body.json()).toMatchObject({ code: "unauthorized" });
    const forged = await request(`${base}/processes`, { headers: { authorization: "Bearer eyJhbGciOiJIUzI1NiJ9.e30.x" } });
    expect(forged.statusCode).toBe(401);
    await forged.body.dump();
  });
});
