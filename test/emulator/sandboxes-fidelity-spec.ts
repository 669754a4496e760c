// One specification, run directly against the emulator and through the gateway, of what the service's own e2e suite
// sees and the emulator once did not: a sandbox's sizes from inside (/proc/meminfo, free, df /, writes past the disk),
// and symlinks (list, watch, read, download through a linked directory; symlinkTarget absolute; loops not followed).
import { expect, it } from "vitest";
import type { Hyperbrowser } from "@hyperbrowser/sdk";

type SandboxHandle = Awaited<ReturnType<Hyperbrowser["sandboxes"]["create"]>>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
    await sbx.exec("rm -f /home/ubuntu/fill");
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

export { sleep };
