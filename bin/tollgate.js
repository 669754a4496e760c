#!/usr/bin/env node
// Runs the compiled CLI (dist/, made by `npm run build`). Source maps make stack traces point at the TypeScript. From a
// checkout without a build, `npm run tollgate -- …` runs the source through tsx instead (a dev dependency).
import { existsSync, readdirSync, statSync } from "node:fs";

const cli = new URL("../dist/src/cli/index.js", import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write("tollgate: no compiled build in dist/: run `npm run build` (or `npm run tollgate -- …` to run the source)\n");
  process.exit(1);
}
// In a checkout (the image has no src/), say when the build is older than the source it came from (a few ms).
const src = new URL("../src/", import.meta.url);
if (existsSync(src)) {
  const stamp = new URL("../dist/.built", import.meta.url); // written by each `npm run build` (tsc skips unchanged files)
  const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
  const newer = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = new URL(e.name + (e.isDirectory() ? "/" : ""), dir);
      if (e.isDirectory() ? newer(path) : /(?<!\.test)\.tsx?$/.test(e.name) && statSync(path).mtimeMs > built) return true;
    }
    return false;
  };
  if (["../src/", "../config/", "../middleware/"].some((d) => newer(new URL(d, import.meta.url))))
    process.stderr.write("tollgate: dist/ is older than the source; run `npm run build` to run your changes\n");
}
process.setSourceMapsEnabled(true);
await import(cli.href);
