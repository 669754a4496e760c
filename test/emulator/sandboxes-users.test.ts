// Sandbox users straight against the emulator with the unmodified SDK: `ubuntu` and `root` on every runtime
// operation, sudo, root's isolation from other sandboxes and the host, and sizes enforced through cgroups.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeCgroups } from "../../emulator/sandboxes/cgroups.js";
import { startSandboxHarness, type SandboxHandle, type SandboxHarness } from "./sandboxes-harness.js";
import { sandboxUsersSpec } from "./sandboxes-users-spec.js";

let h: SandboxHarness;
let a: SandboxHandle;
let b: SandboxHandle;

beforeAll(async () => {
  h = await startSandboxHarness();
  [a, b] = await Promise.all([h.hb.sandboxes.create({ imageName: "ubuntu" }), h.hb.sandboxes.create({ imageName: "node" })]);
});
afterAll(async () => {
  await h?.close();
});

describe("users, directly", () => sandboxUsersSpec(() => a));

describe("root stays inside its sandbox", () => {
  it("cannot see another sandbox's files or processes", async () => {
    await b.files.withRunAs("root").writeText("/root/b-secret", "b");
    await b.processes.start("sleep 463.25", { runAs: "root" });
    // The names are split so the command line itself (visible in ps) does not contain them.
    const look = await a.exec("f=b-; ls /root; cat /root/${f}secret; ps -eo args; find / -xdev -name ${f}secret 2>/dev/null; echo end", {
      runAs: "root",
    });
    expect(look.stdout).not.toContain("b-secret");
    expect(look.stdout).not.toContain("sleep 463.25");
    expect(look.stdout).toContain("end");
    expect(await a.files.withRunAs("root").exists("/root/b-secret")).toBe(false);
  });

  it("cannot see or change the host: no host processes, /usr and kernel knobs read-only, even in a new mount namespace", async () => {
    const marker = `/tmp/tollgate-root-escape-${process.pid}`;
    const r = await a.exec(
      [
        `echo x > ${marker}`,
        "touch /usr/escape",
        "mount -o remount,rw /usr",
        "unshare -m sh -c 'mount -o remount,rw /usr && touch /usr/escape2'",
        "echo 1 > /proc/sys/kernel/domainname",
        "hostname other",
        "ls /sys/fs/cgroup",
        "echo done",
      ].join("; "),
      { runAs: "root" },
    );
    expect(r.stdout).toContain("done");
    expect(r.stderr).toMatch(/Read-only file system/);
    expect(r.stderr).toMatch(/permission denied/i);
    for (const p of [marker, "/usr/escape", "/usr/escape2"]) expect(existsSync(p)).toBe(false);
    const ps = await a.exec("ps -eo args", { runAs: "root" });
    expect(ps.stdout).not.toMatch(/vitest/);
    expect(ps.stdout.trim().split("\n").length).toBeLessThan(15);
    expect((await a.exec("cat /proc/1/cmdline | tr '\\0' ' '", { runAs: "root" })).stdout).not.toContain("node");
    // Its capabilities are those of its own user namespace, not the host's.
    expect((await a.exec("readlink /proc/self/ns/user", { runAs: "root" })).stdout).not.toBe(
      (await import("node:fs")).readlinkSync("/proc/self/ns/user") + "\n",
    );
  });
});

describe("a snapshot shaped by root", () => {
  it("boots without the host following the sandbox's symlinks", async () => {
    const target = join(mkdtempSync(join(tmpdir(), "tollgate-symlink-")), "host-file");
    writeFileSync(target, "host content");
    await b.exec(`ln -sfn ${target} /etc/hosts && mkdir -p /x && ln -sfn /x /home/ubuntu/link`, { runAs: "root" });
    const snap = await b.createMemorySnapshot({ snapshotName: "root-shaped" });
    const clone = await h.hb.sandboxes.create({ snapshotName: "root-shaped", snapshotId: snap.snapshotId });
    try {
      expect(readFileSync(target, "utf8")).toBe("host content");
      // The clone keeps what root made (a dangling link inside: that path does not exist in the sandbox).
      expect((await clone.exec("readlink /etc/hosts; readlink /home/ubuntu/link")).stdout).toBe(`${target}\n/x\n`);
      expect(await clone.exec("sudo -n whoami")).toMatchObject({ exitCode: 0, stdout: "root\n" });
    } finally {
      await clone.stop();
      rmSync(dirname(target), { recursive: true, force: true });
    }
  });
});

const cgroups = probeCgroups();
describe.skipIf(cgroups.mode === "none")(`sizes through cgroup ${cgroups.mode}`, () => {
  it("caps memory at memMiB and CPUs at vcpus", async () => {
    const small = await h.hb.sandboxes.create({ imageName: "node", memoryMiB: 160, cpu: 1 } as any);
    try {
      expect(small).toMatchObject({ memoryMiB: 160, cpu: 1 });
      const hog = await small.exec("node -e 'const a=[]; for(let i=0;i<64;i++){a.push(Buffer.alloc(16<<20,1))} console.log(\"survived\")'");
      expect(hog.stdout).not.toContain("survived");
      expect(hog.exitCode).not.toBe(0);
      const fits = await small.exec("node -e 'const b=Buffer.alloc(32<<20,1); console.log(\"fits\", b.length)'");
      expect(fits.stdout).toContain("fits");
      if (cgroups.roots.cpuset) expect((await small.exec("nproc")).stdout).toBe("1\n");
      // Even root cannot lift its own limits: the cgroup tree is not in its mount namespace.
      expect((await small.exec("cat /proc/self/cgroup", { runAs: "root" })).stdout).toContain(small.id);
    } finally {
      await small.stop();
    }
  });
});
