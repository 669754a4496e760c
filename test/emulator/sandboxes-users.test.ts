// Sandbox users straight against the emulator with the unmodified SDK: `ubuntu` and `root` on every runtime
// operation, sudo, root's isolation from other sandboxes and the host, and sizes enforced through cgroups.
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeCgroups } from "../../emulator/sandboxes/cgroups.js";
import { probeIsolation } from "../../emulator/sandboxes/jail.js";
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

/** Host uids (real, effective, saved, fs) of the sandbox process whose command line is `argv`, read from the host. */
async function hostUids(sbx: SandboxHandle, argv: string[]): Promise<number[]> {
  for (let i = 0; i < 100; i++) {
    for (const pid of await h.hostPids(sbx.id)) {
      const cmdline = (() => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, "utf8");
        } catch {
          return "";
        }
      })();
      if (cmdline !== `${argv.join("\0")}\0`) continue;
      const uid = /^Uid:\s+(.*)$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
      return uid!.trim().split(/\s+/).map(Number);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no process ${argv.join(" ")} in ${sbx.id}`);
}

describe.skipIf(!probeIsolation(probeCgroups()).idmappedMounts)("root inside is not root outside", () => {
  it("runs root's and the user's processes as unprivileged host uids, a range per sandbox", async () => {
    const started = await Promise.all([
      a.processes.start("sleep 4711.1", { runAs: "root" }),
      a.processes.start("sleep 4711.2"),
      b.processes.start("sleep 4711.3", { runAs: "root" }),
    ]);
    try {
      const [rootA, userA, rootB] = await Promise.all([
        hostUids(a, ["sleep", "4711.1"]),
        hostUids(a, ["sleep", "4711.2"]),
        hostUids(b, ["sleep", "4711.3"]),
      ]);
      for (const uids of [rootA, userA, rootB]) {
        expect(uids).toHaveLength(4);
        for (const uid of uids) expect(uid).toBeGreaterThanOrEqual(100_000);
      }
      const base = rootA[0]!;
      expect(rootA).toEqual([base, base, base, base]);
      expect(userA).toEqual([base + 1000, base + 1000, base + 1000, base + 1000]);
      expect(rootB[0]).not.toBe(base);
      expect(Math.abs(rootB[0]! - base)).toBeGreaterThanOrEqual(65_536);
      // Inside, the same processes are root and ubuntu, through the sandbox's own map.
      expect((await a.exec("cat /proc/self/uid_map", { runAs: "root" })).stdout.trim().split(/\s+/)).toEqual(["0", String(base), "65536"]);
      expect((await a.exec("sudo -n sh -c 'id -u; grep ^Uid /proc/self/status'")).stdout).toMatch(/^0\nUid:\s+0\s+0\s+0\s+0\n$/);
    } finally {
      await Promise.all(started.map((p) => p.kill().catch(() => {})));
    }
  });

  it("keeps the ids on disk: root's files are uid 0, the user's 1000, and show so inside", async () => {
    const r = await a.exec("echo r > /root/by-root && stat -c %u:%U /root/by-root && sudo -n touch /home/ubuntu/by-sudo", {
      runAs: "root",
    });
    expect(r).toMatchObject({ exitCode: 0, stdout: "0:root\n" });
    expect((await a.exec("echo u > /home/ubuntu/by-user && stat -c %u:%U /home/ubuntu/by-user /home/ubuntu/by-sudo")).stdout).toBe(
      "1000:ubuntu\n0:root\n",
    );
    const root = h.hostRootDir(a.id);
    expect(lstatSync(join(root, "root/by-root"))).toMatchObject({ uid: 0, gid: 0 });
    expect(lstatSync(join(root, "home/ubuntu/by-user"))).toMatchObject({ uid: 1000, gid: 1000 });
    expect(lstatSync(join(root, "home/ubuntu/by-sudo"))).toMatchObject({ uid: 0, gid: 0 });
    // System files in the shared /usr show as root's, as on the real service, and setuid sudo is root's inside only.
    expect((await a.exec("stat -c %U:%G /usr/bin/env /usr/bin/sudo /")).stdout).toBe("root:root\nroot:root\nroot:root\n");
  });

  it("cannot write the host files it sees read-only, even through sudo, nor reach another sandbox's", async () => {
    const before = statSync("/usr/bin/env").mtimeMs;
    const r = await a.exec(
      ["echo x >> /run/tollgate/agent.mjs", "sudo -n sh -c 'echo x >> /usr/bin/env'", "chown 0 /usr/bin/env", "echo end"].join("; "),
      { runAs: "root" },
    );
    expect(r.stdout).toBe("end\n");
    expect(r.stderr.match(/Read-only file system/g)?.length).toBe(3);
    expect(statSync("/usr/bin/env").mtimeMs).toBe(before);
    // b's root writes a private file; from a, even root finds no path to it (nor to b's processes).
    await b.exec("echo b-private > /root/b-only && chmod 600 /root/b-only", { runAs: "root" });
    const look = await a.exec("f=b-; cat /root/${f}only /proc/*/root/root/${f}only 2>&1; echo end", { runAs: "root" });
    expect(look.stdout).not.toContain("b-private");
    expect(look.stdout).toContain("end");
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
