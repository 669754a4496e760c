// Preloaded (`node --import ./test/packaging/module-probe.mjs …`) into a process under test: records every module it
// loads, one URL or path a line, in the file named by TOLLGATE_TEST_MODULE_LOG: ES modules as they are resolved (by a
// resolve hook, on the loader's thread), CommonJS ones (require.cache) when the process exits.
import { appendFileSync } from "node:fs";
import { createRequire, register } from "node:module";

const log = process.env.TOLLGATE_TEST_MODULE_LOG;
if (log) {
  register("./module-probe-hooks.mjs", import.meta.url, { data: { log } });
  const require = createRequire(import.meta.url);
  process.on("exit", () => appendFileSync(log, `${Object.keys(require.cache).join("\n")}\n`));
}
