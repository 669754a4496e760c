// One specification, run directly against the emulator and through the gateway: every file, process, terminal and
// watch operation as the default user (`ubuntu`) and as `root`, root writing into /home/ubuntu, and sudo.
import { expect, it } from "vitest";
import type { Hyperbrowser } from "@hyperbrowser/sdk";
import { request } from "undici";

type SandboxHandle = Awaited<ReturnType<Hyperbrowser["sandboxes"]["create"]>>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Presigned URLs name `localhost`; connect to 127.0.0.1 and keep Host. */
const raw = (url: string, init: Parameters<typeof request>[1] = {}) => {
  const u = new URL(url);
  return request(`http://127.0.0.1:${u.port}${u.pathname}${u.search}`, {
    ...init,
    headers: { host: u.host, ...((init.headers as any) ?? {}) },
  });
};

const USERS = [
  { runAs: undefined, name: "ubuntu", home: "/home/ubuntu", dir: "/home/ubuntu/by-ubuntu" },
  // Root works in the default user's home: the real service's root may read and write the user's files.
  { runAs: "root", name: "root", home: "/root", dir: "/home/ubuntu/by-root" },
] as const;

export function sandboxUsersSpec(sandbox: () => SandboxHandle): void {
  for (const u of USERS) {
    const label = u.runAs ?? "the default user";

    it(`runs exec and processes (start, list, stdin, signal, wait) as ${label}`, async () => {
      const sbx = sandbox();
      const r = await sbx.exec("id -un; echo $HOME; pwd; echo $SHELL", { runAs: u.runAs });
      expect(r).toMatchObject({ exitCode: 0, stdout: `${u.name}\n${u.home}\n${u.home}\n/bin/bash\n` });
      const cat = await sbx.processes.start("tr a-z A-Z", { runAs: u.runAs });
      await cat.writeStdin("as " + u.name);
      await cat.writeStdin({ eof: true });
      expect((await cat.wait({ timeoutMs: 10_000 })).stdout).toBe(`AS ${u.name.toUpperCase()}`);
      const sleeper = await sbx.processes.start("sleep 60", { runAs: u.runAs });
      expect((await sbx.processes.list({ status: "running" })).data.map((p) => p.id)).toContain(sleeper.id);
      await sleeper.signal("TERM");
      expect((await sleeper.wait({ timeoutMs: 10_000 })).status).toBe("killed");
    });

    it(`runs a terminal as ${label}: attach, type, read, resize, kill`, async () => {
      const sbx = sandbox();
      const t = await sbx.terminal.create({ command: "bash", args: ["--norc", "--noprofile"], rows: 24, cols: 80, runAs: u.runAs } as any);
      const conn = await t.attach();
      let seen = "";
      const reader = (async () => {
        for await (const e of conn.events()) if (e.type === "output") seen += e.data;
      })();
      // The prompt may already be out before events() subscribes; typing does not depend on seeing it.
      for (let i = 0; i < 10 && !/[$#] $/.test(seen); i++) await sleep(50);
      await conn.write("echo who=$(id -un)\r");
      for (let i = 0; i < 200 && !seen.includes(`who=${u.name}\r\n`); i++) await sleep(50);
      expect(seen).toContain(`who=${u.name}\r\n`);
      await conn.resize(30, 100);
      await sleep(100);
      expect((await t.refresh()).current).toMatchObject({ rows: 30, cols: 100 });
      expect((await t.kill()).running).toBe(false);
      await conn.close();
      await reader;
    });

    it(`does every file operation as ${label}, with ls -l modes and the right owner`, async () => {
      const sbx = sandbox();
      const files = u.runAs ? sbx.files.withRunAs(u.runAs) : sbx.files;
      const d = u.dir;
      await files.writeText(`${d}/a.txt`, "hello");
      await files.writeText(`${d}/a.txt`, " world", { append: true });
      await files.write([
        { path: `${d}/sub/b.bin`, data: Buffer.from([0, 1, 255]) },
        { path: `${d}/run.sh`, data: "#!/bin/sh\necho ran\n", mode: "750" },
      ]);
      expect(await files.readText(`${d}/a.txt`)).toBe("hello world");
      expect(await files.readText(`${d}/a.txt`, { offset: 6, length: 3 })).toBe("wor");
      expect([...(await files.readBytes(`${d}/sub/b.bin`))]).toEqual([0, 1, 255]);
      const info = await files.getInfo(`${d}/run.sh`);
      expect(info).toMatchObject({
        name: "run.sh",
        type: "file",
        size: 19,
        mode: 0o750,
        permissions: "-rwxr-x---",
        owner: u.name,
        group: u.name,
      });
      expect(info.modifiedTime).toBeInstanceOf(Date);
      const dirInfo = await files.getInfo(d);
      expect(dirInfo).toMatchObject({ type: "dir", permissions: "drwxr-xr-x", owner: u.name });
      expect((await files.list(d)).map((e) => `${e.name}:${e.permissions.slice(0, 1)}`).sort()).toEqual(["a.txt:-", "run.sh:-", "sub:d"]);
      expect((await files.list(d, { depth: 2 })).map((e) => e.name)).toContain("b.bin");
      expect(await files.makeDir(`${d}/m/n`, { parents: true })).toBe(true);
      expect(await files.makeDir(`${d}/m/n`)).toBe(false);
      expect((await files.rename(`${d}/a.txt`, `${d}/m/a.txt`)).owner).toBe(u.name);
      expect((await files.copy({ source: `${d}/m`, destination: `${d}/m2`, recursive: true })).type).toBe("dir");
      await files.chmod({ path: `${d}/m2/a.txt`, mode: "600" });
      expect((await files.getInfo(`${d}/m2/a.txt`)).permissions).toBe("-rw-------");
      if (u.runAs === "root") {
        await files.chown({ path: `${d}/m2`, uid: 1000, gid: 1000, recursive: true });
        expect(await files.getInfo(`${d}/m2/a.txt`)).toMatchObject({ owner: "ubuntu", group: "ubuntu" });
      } else {
        await expect(files.chown({ path: `${d}/m2/a.txt`, uid: 0 })).rejects.toMatchObject({ statusCode: 400 });
      }
      const big = Buffer.alloc(512 * 1024, 3);
      expect(await files.upload(`${d}/up.bin`, big)).toEqual({ path: `${d}/up.bin`, bytesWritten: big.length });
      expect(Buffer.compare(await files.download(`${d}/up.bin`), big)).toBe(0);
      expect((await files.getInfo(`${d}/up.bin`)).owner).toBe(u.name);
      await files.remove(`${d}/m2`, { recursive: true });
      await files.remove(`${d}/m2`, { recursive: true });
      expect(await files.exists(`${d}/m2`)).toBe(false);
    });

    it(`watches a directory and serves presigned URLs as ${label}`, async () => {
      const sbx = sandbox();
      const files = u.runAs ? sbx.files.withRunAs(u.runAs) : sbx.files;
      const d = `${u.dir}-w`;
      await files.makeDir(d);
      const events: Array<{ type: string; name: string }> = [];
      const watch = await files.watchDir(d, (e) => void events.push(e), { recursive: true });
      await sleep(150);
      await files.writeText(`${d}/new.txt`, "1");
      await files.remove(`${d}/new.txt`);
      for (let i = 0; i < 60 && !events.some((e) => e.type === "remove"); i++) await sleep(50);
      await watch.stop();
      expect(events).toEqual(
        expect.arrayContaining([
          { type: "create", name: "new.txt" },
          { type: "remove", name: "new.txt" },
        ]),
      );
      const up = await files.uploadUrl(`${d}/pre.txt`);
      const put = await raw(up.url, { method: "PUT", body: `presigned by ${u.name}` });
      expect(put.statusCode).toBe(200);
      await put.body.dump();
      expect((await files.getInfo(`${d}/pre.txt`)).owner).toBe(u.name);
      const get = await raw((await files.downloadUrl(`${d}/pre.txt`)).url);
      expect(get.statusCode).toBe(200);
      expect(await get.body.text()).toBe(`presigned by ${u.name}`);
    });
  }

  it("lets root read and change what the default user keeps private, and the user cannot read root's", async () => {
    const sbx = sandbox();
    const root = sbx.files.withRunAs("root");
    await sbx.files.writeText("/home/ubuntu/private.txt", "mine", { mode: "000" } as any);
    await sbx.files.chmod({ path: "/home/ubuntu/private.txt", mode: "000" });
    expect(await root.readText("/home/ubuntu/private.txt")).toBe("mine");
    await root.writeText("/home/ubuntu/private.txt", "root was here");
    expect((await sbx.exec("cat /home/ubuntu/private.txt", { runAs: "root" })).stdout).toBe("root was here");
    expect(
      (await sbx.exec("echo x > /home/ubuntu/from-root-exec && stat -c %U:%G /home/ubuntu/from-root-exec", { runAs: "root" })).stdout,
    ).toBe("root:root\n");
    await root.writeText("/root/secret", "root only");
    await expect(sbx.files.readText("/root/secret")).rejects.toMatchObject({ statusCode: 400 });
    expect((await sbx.exec("cat /root/secret")).exitCode).not.toBe(0);
  });

  it("gives the default user passwordless sudo from Debian's package", async () => {
    const sbx = sandbox();
    expect(await sbx.exec("sudo -n whoami")).toMatchObject({ exitCode: 0, stdout: "root\n" });
    const made = await sbx.exec("sudo -n sh -c 'echo hi > /etc/made-by-sudo' && stat -c %U /etc/made-by-sudo && id -nG");
    expect(made).toMatchObject({ exitCode: 0 });
    expect(made.stdout).toBe("root\nubuntu sudo\n");
    expect((await sbx.exec("ls -l /usr/bin/sudo")).stdout).toMatch(/^-rwsr-xr-x 1 root root /);
  });
}
