#!/usr/bin/env node
// @foundry-rs/anvil lists optional binaries for every platform, but only linux-amd64 is published on the registry this
// project installs from, so `npm install` leaves the others out of package-lock.json and `npm ci` then refuses the
// lock. This adds them back as platform-restricted optional entries (never fetched here). Run after `npm install`.
import { readFileSync, writeFileSync } from "node:fs";

const file = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(file, "utf8"));
const anvil = lock.packages["node_modules/@foundry-rs/anvil"];
const platforms = {
  "darwin-amd64": ["darwin", "x64"],
  "darwin-arm64": ["darwin", "arm64"],
  "linux-arm64": ["linux", "arm64"],
  "win32-amd64": ["win32", "x64"],
};
let added = 0;
for (const [name, [os, cpu]] of Object.entries(platforms)) {
  const key = `node_modules/@foundry-rs/anvil-${name}`;
  if (lock.packages[key] || !anvil?.optionalDependencies?.[`@foundry-rs/anvil-${name}`]) continue;
  lock.packages[key] = { version: anvil.version, license: anvil.license, optional: true, os: [os], cpu: [cpu] };
  added++;
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : 1)));
writeFileSync(file, JSON.stringify(lock, null, 2) + "\n");
console.log(`lock-placeholders: ${added} entr${added === 1 ? "y" : "ies"} added`);
