// Copies the files the emulator reads next to its modules at run time (the sandbox agent, the id-map helper, the
// compiled contracts) into dist/, beside the compiled JavaScript that reads them.
import { cpSync, readdirSync } from "node:fs";
import { join } from "node:path";

const root = new URL(".", import.meta.url).pathname;
const assets = ["sandboxes/agent.mjs", "sandboxes/idmap.pl"];
for (const f of readdirSync(join(root, "chain/contracts"))) if (f.endsWith(".json")) assets.push(`chain/contracts/${f}`);
for (const a of assets) cpSync(join(root, a), join(root, "dist", a));
