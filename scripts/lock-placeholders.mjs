#!/usr/bin/env node
// Several tools (@foundry-rs/anvil, @biomejs/biome, oxc-parser under knip, …) list an optional binary package for every
// platform, but the registry this project installs from holds only some of them, so `npm install` leaves the others
// out of package-lock.json and `npm ci` then refuses the lock ("Missing: … from lock file"). This adds every missing
// optional dependency back as a platform-restricted entry (os/cpu/libc read from its name, so it is never fetched on a
// machine it does not match). Run after `npm install`; `--check` fails (exit 1) if the lock needs it, without writing.
import { readFileSync, writeFileSync } from "node:fs";

const check = process.argv.includes("--check");
const file = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(file, "utf8"));
const packages = lock.packages;

const OS = {
  android: "android",
  darwin: "darwin",
  freebsd: "freebsd",
  linux: "linux",
  openharmony: "openharmony",
  win32: "win32",
  windows: "win32",
  sunos: "sunos",
  aix: "aix",
  netbsd: "netbsd",
  openbsd: "openbsd",
};
const CPU = {
  arm64: "arm64",
  aarch64: "arm64",
  x64: "x64",
  amd64: "x64",
  ia32: "ia32",
  x86: "ia32",
  arm: "arm",
  ppc64: "ppc64",
  riscv64: "riscv64",
  s390x: "s390x",
  loong64: "loong64",
  mips64el: "mips64el",
};

/** The platform a binary package is for, read from the parts of its name (`cli-linux-arm64-musl`, `binding-win32-ia32-msvc`). */
function platformOf(name) {
  const parts = name.split("/").pop().split("-");
  const os = parts.map((p) => OS[p]).find(Boolean);
  const cpu = parts.map((p) => CPU[p]).find(Boolean);
  if (!os || !cpu) return undefined;
  const out = { os: [os], cpu: [cpu] };
  if (os === "linux") out.libc = [parts.some((p) => p.startsWith("musl")) ? "musl" : "glibc"];
  return out;
}

/** Whether `name` resolves from the package at `from` (its own node_modules, then each ancestor's, then the root's). */
function resolves(from, name) {
  let dir = from;
  for (;;) {
    if (packages[`${dir ? `${dir}/` : ""}node_modules/${name}`]) return true;
    if (!dir) return false;
    const at = dir.lastIndexOf("/node_modules/");
    dir = at < 0 ? "" : dir.slice(0, at);
  }
}

const added = [];
const unknown = [];
for (const [path, pkg] of Object.entries(packages)) {
  for (const [name, range] of Object.entries(pkg.optionalDependencies ?? {})) {
    if (resolves(path, name)) continue;
    const platform = platformOf(name);
    if (!platform) {
      unknown.push(`${name} (optional dependency of ${path || "the project"})`);
      continue;
    }
    const top = `node_modules/${name}`;
    const key = packages[top] ? `${path}/node_modules/${name}` : top;
    const version = /^\d+\.\d+\.\d+/.test(range) ? range : pkg.version;
    packages[key] = { version, ...(pkg.dev ? { dev: true } : {}), license: pkg.license, optional: true, ...platform };
    added.push(key.replace(/^.*node_modules\//, ""));
  }
}

if (unknown.length) {
  console.error(`lock-placeholders: cannot tell the platform of ${unknown.join(", ")}; add it to package-lock.json by hand`);
  process.exit(1);
}
if (check) {
  if (added.length) {
    console.error(
      `lock-placeholders: package-lock.json misses ${added.length} optional platform package(s) (${added.slice(0, 4).join(", ")}${added.length > 4 ? ", …" : ""}), so \`npm ci\` would refuse it; run \`node scripts/lock-placeholders.mjs\``,
    );
    process.exit(1);
  }
  process.exit(0);
}
lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : 1)));
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(
  `lock-placeholders: ${added.length} entr${added.length === 1 ? "y" : "ies"} added${added.length ? ` (${added.join(", ")})` : ""}`,
);
