// The named base environments sandboxes start from, and the per-image root skeleton laid over the host's /usr.
import { mkdir, writeFile, chown, chmod, cp, symlink } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";

export const SANDBOX_UID = 1000;
export const SANDBOX_GID = 1000;
export const SANDBOX_USER = "ubuntu";
export const SANDBOX_HOME = "/home/ubuntu";
/** Debian's `sudo` group; the default user is in it, as on the real service. */
const SUDO_GID = 27;

export interface Image {
  id: string;
  imageName: string;
  namespace: string;
  source: "public" | "team";
  imageInit: Record<string, unknown> | null;
  uploaded: true;
  createdAt: string;
  updatedAt: string;
  /** What /etc/os-release says inside; all images share the host's read-only /usr (see README). */
  prettyName: string;
  /** Host directory holding this image's writable-root skeleton (etc, home, tmp, var...). */
  skeleton: string;
}

const CATALOG: Array<{ imageName: string; prettyName: string }> = [
  { imageName: "node", prettyName: "Debian GNU/Linux 12 (bookworm) with Node.js 20" },
  { imageName: "debian", prettyName: "Debian GNU/Linux 12 (bookworm)" },
  { imageName: "ubuntu", prettyName: "Debian GNU/Linux 12 (bookworm), served under the name ubuntu" },
];

/** Host /etc entries an image copies; everything else in /etc is synthesized so no host secret leaks in. */
const HOST_ETC = [
  "alternatives",
  "ld.so.cache",
  "ld.so.conf",
  "ld.so.conf.d",
  "bash.bashrc",
  "profile",
  "localtime",
  "timezone",
  "protocols",
  "services",
  "host.conf",
  "inputrc",
  "ssl",
  "ca-certificates",
  "ca-certificates.conf",
  "mime.types",
  "environment",
  "shells",
  "login.defs",
  "skel",
  "pam.conf",
  "pam.d",
  "security",
  "sudo.conf",
];

/** Debian's default sudoers plus passwordless sudo for the default user (the real service's `ubuntu` has it). */
const SUDOERS = `Defaults\tenv_reset
Defaults\tmail_badpass
Defaults\tsecure_path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
Defaults\tuse_pty
root\tALL=(ALL:ALL) ALL
%sudo\tALL=(ALL:ALL) ALL
@includedir /etc/sudoers.d
`;

export async function buildSkeleton(dir: string, prettyName: string): Promise<void> {
  const etc = join(dir, "etc");
  await mkdir(etc, { recursive: true });
  for (const name of HOST_ETC) {
    const src = join("/etc", name);
    if (existsSync(src)) await cp(src, join(etc, name), { recursive: true, verbatimSymlinks: true, force: true }).catch(() => {});
  }
  const files: Record<string, string> = {
    passwd: `root:x:0:0:root:/root:/bin/bash\n${SANDBOX_USER}:x:${SANDBOX_UID}:${SANDBOX_GID}:Ubuntu:${SANDBOX_HOME}:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\nshadow:x:42:\nsudo:x:${SUDO_GID}:${SANDBOX_USER}\n${SANDBOX_USER}:x:${SANDBOX_GID}:\nnogroup:x:65534:\n`,
    hosts: "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    "resolv.conf": "# no external network inside emulator sandboxes\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
    "os-release": `PRETTY_NAME="${prettyName}"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n`,
  };
  for (const [name, body] of Object.entries(files)) await writeFile(join(etc, name), body);
  // No passwords: root's is locked, the default user's sudo needs none.
  await writeFile(join(etc, "shadow"), `root:*:19700:0:99999:7:::\n${SANDBOX_USER}:!:19700:0:99999:7:::\nnobody:*:19700:0:99999:7:::\n`, {
    mode: 0o640,
  });
  await chown(join(etc, "shadow"), 0, 42);
  await writeFile(join(etc, "sudoers"), SUDOERS, { mode: 0o440 });
  await mkdir(join(etc, "sudoers.d"), { recursive: true, mode: 0o755 });
  await writeFile(join(etc, "sudoers.d", "90-ubuntu"), `${SANDBOX_USER} ALL=(ALL) NOPASSWD:ALL\n`, { mode: 0o440 });
  await mkdir(join(etc, "pam.d"), { recursive: true });
  if (!existsSync(join(etc, "pam.d", "sudo"))) {
    await writeFile(
      join(etc, "pam.d", "sudo"),
      "#%PAM-1.0\n@include common-auth\n@include common-account\n@include common-session-noninteractive\n",
    );
  }
  for (const d of ["home", "root", "tmp", "var/tmp", "var/log", "var/lib/sudo", "opt", "srv", "mnt", "run", "usr"])
    await mkdir(join(dir, d), { recursive: true });
  await mkdir(join(dir, SANDBOX_HOME), { recursive: true });
  await writeFile(join(dir, SANDBOX_HOME, ".bashrc"), 'PS1="\\u@\\h:\\w\\$ "\n');
  await chown(join(dir, SANDBOX_HOME), SANDBOX_UID, SANDBOX_GID);
  await chown(join(dir, SANDBOX_HOME, ".bashrc"), SANDBOX_UID, SANDBOX_GID);
  await chmod(join(dir, "tmp"), 0o1777);
  await chmod(join(dir, "var/tmp"), 0o1777);
  await chmod(join(dir, "root"), 0o700);
  // Debian 12 is merged-/usr: these are symlinks in the image, and bwrap mounts the real /usr under them.
  for (const [link, target] of [
    ["bin", "usr/bin"],
    ["sbin", "usr/sbin"],
    ["lib", "usr/lib"],
    ["lib64", "usr/lib64"],
  ]) {
    if (existsSync(join("/", target))) await symlink(target, join(dir, link)).catch(() => {});
  }
}

export class ImageCatalog {
  readonly images: Image[] = [];

  static async create(stateDir: string): Promise<ImageCatalog> {
    const cat = new ImageCatalog();
    const now = new Date().toISOString();
    for (const entry of CATALOG) {
      const skeleton = join(stateDir, "images", entry.imageName);
      await buildSkeleton(skeleton, entry.prettyName);
      cat.images.push({
        id: `img_${randomUUID().replace(/-/g, "").slice(0, 16)}`,
        imageName: entry.imageName,
        namespace: "public",
        source: "public",
        imageInit: null,
        uploaded: true,
        createdAt: now,
        updatedAt: now,
        prettyName: entry.prettyName,
        skeleton,
      });
    }
    return cat;
  }

  find(imageName: string): Image | undefined {
    return this.images.find((i) => i.imageName === imageName);
  }

  /** Adds (or replaces) a team image whose skeleton is already built, e.g. by a completed image build. */
  addTeamImage(imageName: string, skeleton: string, imageInit: Record<string, unknown> | null): Image {
    const now = new Date().toISOString();
    const image: Image = {
      id: `img_${randomUUID().replace(/-/g, "").slice(0, 16)}`,
      imageName,
      namespace: "team",
      source: "team",
      imageInit,
      uploaded: true,
      createdAt: now,
      updatedAt: now,
      prettyName: `Debian GNU/Linux 12 (bookworm) with the files of team image ${imageName}`,
      skeleton,
    };
    this.remove(imageName);
    this.images.push(image);
    return image;
  }

  /** Drops an image from the catalog; sandboxes already started from it keep their own copy of its root. */
  remove(imageName: string): Image | undefined {
    const i = this.images.findIndex((x) => x.imageName === imageName);
    return i < 0 ? undefined : this.images.splice(i, 1)[0];
  }

  wire(image: Image) {
    const { prettyName: _p, skeleton: _s, ...rest } = image;
    return rest;
  }
}
