// One specification, run directly against the emulator and through the gateway, of what the service's own e2e suite
// sees and the emulator once did not: a sandbox's sizes from inside (/proc/meminfo, free, df /, writes past the disk),
// and symlinks (list, watch, read, download through a linked directory; symlinkTarget absolute; loops not followed).
import { expect, it } from "vitest";
import type { Hyperbrowser } from "@hyperbrowser/sdk";

type SandboxHandle = Awaited<ReturnType<Hyperbrowser["sandboxes"]["create"]>>;

export function sandboxSizesSpec(client: () => Hyperbrowser, track: (sbx: SandboxHandle) => void): void {
  it("shows memoryMiB in /proc/meminfo and free, and diskMiB as the size of / (df), enforced", async () => {
    const sbx = await client().sandboxes.create({ imageName: "node", memoryMiB: 384, diskMiB: 200 });
    track(sbx);
    const mem = await sbx.exec("grep -E '^(MemTotal|SwapTotal):' /proc/meminfo");
    expect(mem.stdout).toMatch(/^MemTotal:\s+393216 kB$/m);
    expect(mem.stdout).toMatch(/^SwapTotal:\s+0 kB$/m);
    const free = await sbx.exec("free -m | awk '/^Mem:/ {print $2}'");
    expect(free.stdout.trim()).toBe("384");
    const df = await sbx.exec("df -m --output=size / | tail -1");
    expect(Number(df.stdout.trim())).toBe(200);
    // The size is enforced: writing past it fails with ENOSPC, and the space comes back once the file is gone.
    const fill = await sbx.exec("dd if=/dev/zero of=/home/ubuntu/fill bs=1M count=260 2>&1; echo rc=$?");
    expect(fill.stdout).toMatch(/No space left on device/);
    expect(fill.stdout).not.toMatch(/rc=0/);
    // A runtime write on the full disk answers a clear JSON error, not a 500.
    const full = await sbx.files.writeText("/home/ubuntu/more.txt", "x".repeat(1 << 20)).then(
      () => undefined,
      (e) => e as { statusCode?: number; message: string },
    );
    expect(full?.statusCode).toBe(507);
    expect(full?.message).toMatch(/no space left/i);
    await sbx.exec("rm -f /home/ubuntu/fill /home/ubuntu/more.txt");
    expect((await sbx.exec("echo ok > /home/ubuntu/after && cat /home/ubuntu/after")).stdout).toBe("ok\n");
    // The sizes read back as asked.
    const detail = await client().sandboxes.get(sbx.id);
    expect(detail).toMatchObject({ memoryMiB: 384, diskMiB: 200 });
  });

  it("a sandbox sized by default shows the default disk (8192 MiB) and memory (2048 MiB)", async () => {
    const sbx = await client().sandboxes.create({ imageName: "node" });
    track(sbx);
    expect(Number((await sbx.exec("df -m --output=size / | tail -1")).stdout.trim())).toBe(8192);
    expect((await sbx.exec("free -m | awk '/^Mem:/ {print $2}'")).stdout.trim()).toBe("2048");
  });

  it("refuses a disk size it cannot make with 400 and the field named", async () => {
    for (const diskMiB of [0, 10, -5, 1.5, 10 * 1024 * 1024]) {
      const err = await client()
        .sandboxes.create({ imageName: "node", diskMiB })
        .then(
          (sbx) => (track(sbx), undefined),
          (e) => e as { statusCode?: number; message: string },
        );
      expect(err?.statusCode).toBe(400);
      expect(err?.message).toMatch(/diskSizeMiB/);
    }
  });
}

/** Waits (bounded) for the first event `pick` accepts. */
function firstEvent<T>(timeoutMs = 20_000) {
  let resolve!: (v: T) => void;
  const promise = new Promise<T | "timeout">((r) => {
    resolve = r;
    setTimeout(() => r("timeout"), timeoutMs).unref?.();
  });
  return { promise, resolve };
}

export function sandboxSymlinkSpec(sandbox: () => SandboxHandle): void {
  const base = "/home/ubuntu/links";
  const sh = async (script: string) => {
    const r = await sandbox().exec({ command: "bash", args: ["-lc", script] });
    expect(r.exitCode, r.stderr).toBe(0);
  };

  it("lists a symlinked directory under the target's real path", async () => {
    const sbx = sandbox();
    await sh(
      `mkdir -p ${base}/one/target-dir && printf child > ${base}/one/target-dir/child.txt && ln -sfn ${base}/one/target-dir ${base}/one/link-dir`,
    );
    const entries = await sbx.files.list(`${base}/one/link-dir`, { depth: 1 });
    expect(entries.map((e) => e.path)).toEqual([`${base}/one/target-dir/child.txt`]);
    // A renamed link still follows, and its info keeps the absolute target.
    await sbx.files.rename(`${base}/one/link-dir`, `${base}/one/link-renamed`);
    expect((await sbx.files.getInfo(`${base}/one/link-renamed`)).symlinkTarget).toBe(`${base}/one/target-dir`);
    expect((await sbx.files.list(`${base}/one/link-renamed`, { depth: 1 })).map((e) => e.path)).toEqual([
      `${base}/one/target-dir/child.txt`,
    ]);
  });

  it("follows a parent symlink to its target for list, read, download and watch", async () => {
    const sbx = sandbox();
    const outside = "/var/tmp/links-outside";
    await sh(`mkdir -p ${base}/two ${outside} && printf 'outside secret' > ${outside}/secret.txt && ln -sfn ${outside} ${base}/two/evil`);
    expect(await sbx.files.readText(`${base}/two/evil/secret.txt`)).toBe("outside secret");
    expect((await sbx.files.download(`${base}/two/evil/secret.txt`)).toString("utf8")).toBe("outside secret");
    expect((await sbx.files.list(`${base}/two/evil`, { depth: 1 })).map((e) => e.path)).toEqual([`${outside}/secret.txt`]);
    const seen = firstEvent<string>();
    const events: string[] = [];
    const handle = await sbx.files.watchDir(`${base}/two/evil`, async (e) => {
      events.push(`${e.type} ${e.name}`);
      if (e.type === "write" && e.name === "fresh.txt") seen.resolve(e.name);
    });
    try {
      // Written again every second until seen: on a loaded host the watch may be armed a moment after its handle
      // resolves, and a write before that is not an event.
      let done = false;
      void seen.promise.then(() => (done = true));
      for (let i = 0; i < 15 && !done; i++) {
        await sbx.files.writeText(`${outside}/fresh.txt`, `watch parent link ${i}`);
        await Promise.race([seen.promise, new Promise((r) => setTimeout(r, 1_000))]);
      }
      expect(await seen.promise, events.join(", ")).toBe("fresh.txt");
    } finally {
      await handle.stop();
    }
  });

  it("reports symlinkTarget absolute, resolved against the link's directory; a broken link keeps its text", async () => {
    const sbx = sandbox();
    const dir = `${base}/three`;
    await sh(
      [
        `mkdir -p ${dir}/nested && printf payload > ${dir}/nested/target.txt`,
        `cd ${dir}/nested && ln -sfn target.txt rel-link && ln -sfn .. loop && ln -sfn /etc/hosts abs-link`,
        `ln -sfn missing-target.txt broken && ln -sfn ../nowhere/x broken-up && ln -sfn self-loop self-loop`,
      ].join(" && "),
    );
    const info = async (name: string) => (await sbx.files.getInfo(`${dir}/nested/${name}`)).symlinkTarget;
    expect(await info("rel-link")).toBe(`${dir}/nested/target.txt`);
    expect(await info("loop")).toBe(dir);
    expect(await info("abs-link")).toBe("/etc/hosts");
    expect(await info("broken")).toBe("missing-target.txt");
    expect(await info("broken-up")).toBe("../nowhere/x");
    expect(await info("self-loop")).toBe("self-loop");
    expect(await info("target.txt")).toBeUndefined();
    // The same in a listing, and a copied tree's links point into the copy.
    const listed = await sbx.files.list(`${dir}/nested`, { depth: 1 });
    expect(listed.find((e) => e.name === "rel-link")?.symlinkTarget).toBe(`${dir}/nested/target.txt`);
    await sbx.files.copy({ source: `${dir}/nested`, destination: `${dir}/copy`, recursive: true });
    expect((await sbx.files.getInfo(`${dir}/copy/rel-link`)).symlinkTarget).toBe(`${dir}/copy/target.txt`);
    expect((await sbx.files.getInfo(`${dir}/copy/loop`)).symlinkTarget).toBe(dir);
  });

  it("does not follow symlink loops when listing deep, and answers 400 for a path that is a loop", async () => {
    const sbx = sandbox();
    const dir = `${base}/four`;
    await sh(`mkdir -p ${dir}/nested && printf x > ${dir}/nested/child.txt && cd ${dir}/nested && ln -sfn .. loop && ln -sfn me me`);
    const paths = (await sbx.files.list(dir, { depth: 4 })).map((e) => e.path);
    expect(paths).toContain(`${dir}/nested/loop`);
    expect(paths.some((p) => p.includes("/loop/"))).toBe(false);
    const err = await sbx.files.list(`${dir}/nested/me`, { depth: 1 }).then(
      () => undefined,
      (e) => e as { statusCode?: number },
    );
    expect(err?.statusCode).toBe(400);
  });
}
