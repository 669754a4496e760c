// The resolve hook of module-probe.mjs: appends each resolved ES module URL to the log file.
import { appendFileSync } from "node:fs";

let log;
export function initialize(data) {
  log = data.log;
}

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(log, `${resolved.url}\n`);
  return resolved;
}
