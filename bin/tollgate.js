#!/usr/bin/env node
// Runs the compiled CLI (dist/, made by `npm run build`). Source maps make stack traces point at the TypeScript. From a
// checkout without a build, `npm run tollgate -- …` runs the source through tsx instead (a dev dependency).
import { existsSync } from "node:fs";

const cli = new URL("../dist/src/cli.js", import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write("tollgate: no compiled build in dist/: run `npm run build` (or `npm run tollgate -- …` to run the source)\n");
  process.exit(1);
}
process.setSourceMapsEnabled(true);
await import(cli.href);
