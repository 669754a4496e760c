// The commands that read a config file offline, with no gateway running: `config check`, `config render --worker`, and
// `keys create` without --gateway (a key and the hash line to paste into the file). Loaded by ./index.ts when one runs.
import { parseArgs } from "node:util";

const configLoader = () => import("../../config/load.js");
const configFiles = () => import("../../config/load-node.js");

/** A command's plain refusal: ./index.ts prints the message (no stack) and exits 1. */
class ConfigFileCliError extends Error {
  override name = "ConfigError";
}

function fail(msg: string): never {
  throw new ConfigFileCliError(msg);
}

export async function cmdConfigRender(args: string[]) {
  const { values, positionals } = parseArgs({ args, options: { worker: { type: "string" } }, allowPositionals: true });
  const file = values.worker ?? positionals[0];
  if (!file || values.worker === undefined) fail("tollgate config render --worker FILE");
  const { ConfigError } = await configLoader();
  const { readConfigFile } = await configFiles();
  try {
    const { raw, config } = await readConfigFile(file);
    const { renderWorker, workerProblems } = await import("./worker-config.js");
    const problems = workerProblems(config);
    if (problems.length) fail(`${file} cannot run as the Worker:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    process.stdout.write(renderWorker(raw, config, file));
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
}

export async function cmdConfigCheck(args: string[]) {
  const worker = args.includes("--worker");
  const file = args.filter((a) => a !== "--worker")[0];
  if (!file) fail("tollgate config check [--worker] FILE");
  const { ConfigError } = await configLoader();
  const { readConfigFile } = await configFiles();
  try {
    const { raw, config: cfg } = await readConfigFile(file);
    const { configDoubts } = await import("./start-checks.js");
    const { errors, warnings } = configDoubts(raw, cfg);
    if (worker) {
      // On Workers [state] is the Durable Objects binding: no rehearsal to say, nothing for `start` to refuse.
      const { workerProblems } = await import("./worker-config.js");
      errors.push(...workerProblems(cfg));
      warnings.splice(0, warnings.length, ...warnings.filter((w) => !w.startsWith("state") && !w.startsWith("server.publicOrigin")));
    }
    const warned = warnings.map((w) => `  warning: ${w}\n`).join("");
    if (errors.length) fail(`${file} is not ready to run:\n${errors.map((e) => `  - ${e}`).join("\n")}\n${warned}`);
    const accounts = cfg.upstream.accounts
      ? `, ${cfg.upstream.accounts.length} upstream account${cfg.upstream.accounts.length === 1 ? "" : "s"}`
      : "";
    process.stdout.write(`${file}: OK (${cfg.tenants.length} tenant${cfg.tenants.length === 1 ? "" : "s"}${accounts})\n${warned}`);
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
}

export async function cmdKeysCreate(args: string[]) {
  const { values } = parseArgs({ args, options: { tenant: { type: "string" }, expires: { type: "string" }, label: { type: "string" } } });
  if (!values.tenant) fail("tollgate keys create --tenant ID");
  if (values.expires && Number.isNaN(Date.parse(values.expires))) fail(`--expires: expected an ISO-8601 date like "2027-01-31T00:00:00Z"`);
  const { generateTenantKey, hashTenantKey } = await import("../identity/tenants.js");
  const key = generateTenantKey();
  const hash = await hashTenantKey(key);
  const fields = [`hash = "${hash}"`];
  if (values.label) fields.push(`label = ${JSON.stringify(values.label)}`);
  if (values.expires) fields.push(`expiresAt = "${new Date(values.expires).toISOString()}"`);
  fields.push(`createdAt = "${new Date().toISOString()}"`); // the console shows it
  process.stdout.write(
    `New key for tenant "${values.tenant}" (shown once; only its hash is kept):\n\n  ${key}\n\n` +
      `Paste into that tenant's keys in your config:\n\n  keys = [{ ${fields.join(", ")} }]\n`,
  );
}
