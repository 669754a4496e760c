#!/usr/bin/env node
// Makes the npm cache the image build installs from, so `podman build`/`docker build` (and compose's builds) never
// reach a registry: every package of package-lock.json that this platform installs, taken from this machine's npm cache
// (filled by `npm ci`) into deploy/npm-cache/_cacache, by content hash. The Containerfile's build stage mounts that
// directory and runs `npm ci --offline --cache` against it: npm reads a locked package's tarball from the cache by its
// `integrity` when its lock entry also has a `resolved` URL, so the content files are all it needs (no index, no
// packuments). A lock written with `omit-lockfile-registry-resolved` (as this one is) has none: inside the build,
// `node npm-cache.mjs --resolve package-lock.json` writes each entry's registry URL into that copy of the lock first.
// Usage: node deploy/npm-cache.mjs [--from <npm cache dir>] [--to <dir>]   (defaults: `npm config get cache`,
// deploy/npm-cache). Files are hard-linked when the two directories share a file system, else copied. Idempotent.
// Fails naming the packages it cannot find (run `npm ci` once with registry access, then again).
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, linkSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const argv = process.argv.slice(2);
const opt = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};

const toResolve = opt("--resolve");
if (toResolve) {
  // The URL only names the tarball; npm finds it in the cache by integrity and never asks the registry.
  const file = JSON.parse(readFileSync(toResolve, "utf8"));
  let n = 0;
  for (const [path, entry] of Object.entries(file.packages ?? {})) {
    if (!path || entry.link || entry.resolved || !entry.integrity || !entry.version || entry.inBundle) continue;
    const name = entry.name ?? path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);
    entry.resolved = `https://registry.npmjs.org/${name}/-/${name.split("/").pop()}-${entry.version}.tgz`;
    n++;
  }
  writeFileSync(toResolve, `${JSON.stringify(file, null, 2)}\n`);
  console.error(`npm-cache: ${n} registry URLs written into ${toResolve}`);
  process.exit(0);
}
const from = resolve(opt("--from") ?? execFileSync("npm", ["config", "get", "cache"], { encoding: "utf8" }).trim());
const to = resolve(opt("--to") ?? join(root, "deploy", "npm-cache"));
const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"));

/** Whether npm installs this lockfile entry on this machine (optional packages for other systems are skipped). */
const wanted = (entry) => {
  const fits = (list, value) =>
    !list || list.some((v) => v === value) || (list.every((v) => v.startsWith("!")) && !list.includes(`!${value}`));
  const libc = process.report?.getReport().header.glibcVersionRuntime ? "glibc" : "musl";
  return fits(entry.os, process.platform) && fits(entry.cpu, process.arch) && fits(entry.libc, libc);
};
/** cacache's content path for one `algo-base64` hash. */
const contentPath = (cache, hash) => {
  const dash = hash.indexOf("-");
  const algo = hash.slice(0, dash);
  const hex = Buffer.from(hash.slice(dash + 1), "base64").toString("hex");
  return join(cache, "_cacache", "content-v2", algo, hex.slice(0, 2), hex.slice(2, 4), hex.slice(4));
};

let linked = 0;
let copied = 0;
let kept = 0;
let bytes = 0;
const missing = [];
let optional = 0;
for (const [path, entry] of Object.entries(lock.packages ?? {})) {
  if (!path || entry.link || !entry.integrity || entry.inBundle) continue;
  const hashes = entry.integrity.split(/\s+/).filter(Boolean);
  const found = hashes.map((h) => [contentPath(from, h), contentPath(to, h)]).find(([src]) => existsSync(src));
  if (!found) {
    // An optional package npm cannot fetch is left out by `npm ci` (as on a machine it does not fit), so only the
    // others must be there: the optional ones missing here are dependencies of packages for other systems.
    if (entry.optional) optional++;
    else if (wanted(entry)) missing.push(`${path.replace(/^.*node_modules\//, "")}@${entry.version}`);
    continue;
  }
  const [src, dst] = found;
  bytes += statSync(src).size;
  if (existsSync(dst)) {
    kept++;
    continue;
  }
  mkdirSync(dirname(dst), { recursive: true });
  try {
    linkSync(src, dst);
    linked++;
  } catch {
    copyFileSync(src, dst);
    copied++;
  }
}
// Anything npm would add at run time (index, tmp, logs) is not wanted in the build context.
for (const extra of ["index-v5", "tmp"]) rmSync(join(to, "_cacache", extra), { recursive: true, force: true });
if (missing.length) {
  console.error(
    `npm-cache: ${missing.length} package(s) not in ${from}: ${missing.slice(0, 10).join(", ")}${missing.length > 10 ? ", …" : ""}`,
  );
  console.error("npm-cache: run `npm ci` (with registry access) to fill the npm cache, then this again");
  process.exit(1);
}
console.error(
  `npm-cache: ${linked + copied + kept} packages (${(bytes / 1e6).toFixed(0)} MB) in ${to} (${linked} linked, ${copied} copied, ${kept} already there; ${optional} optional ones for other systems left out)`,
);
