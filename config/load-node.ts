// The config loader's Node half: the file itself and the secrets kept in files, read with node:fs. Only Node entries (the
// CLI, `tollgate start`) import it, so the Worker's bundle carries no `node:fs/promises` (docs/worker-bundle.md).
import { readFile } from "node:fs/promises";
import { accountApiKeysFromEnv, accountWalletKeysFromEnv, ConfigError, oidcClientSecretFromEnv, parseConfigSource } from "./load.js";
import type { TollgateConfig } from "./schema.js";

export async function loadConfigFile(path: string): Promise<TollgateConfig> {
  return (await readConfigFile(path)).config;
}

/** loadConfigFile, with the object as written (parseConfigSource). */
export async function readConfigFile(path: string): Promise<{ raw: unknown; config: TollgateConfig }> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new ConfigError([`(file): cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`], path);
  }
  return parseConfigSource(text, path);
}

/** The OIDC client secret on Node: from a file when clientSecretFile is set, else as oidcClientSecretFromEnv. */
export async function oidcClientSecret(config: TollgateConfig, env: Record<string, string | undefined>): Promise<string | undefined> {
  const file = config.operators.oidc?.clientSecretFile;
  if (!file) return oidcClientSecretFromEnv(config, env);
  let v: string;
  try {
    v = (await readFile(file, "utf8")).trim();
  } catch (err) {
    throw new ConfigError([`operators.oidc.clientSecretFile: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`]);
  }
  if (!v) throw new ConfigError([`operators.oidc.clientSecretFile: ${file} is empty`]);
  return v;
}

/** The accounts' API keys on Node: apiKeyFile entries read from their files, the rest as accountApiKeysFromEnv. */
export async function accountApiKeys(
  config: TollgateConfig,
  env: Record<string, string | undefined>,
): Promise<Record<string, string> | undefined> {
  const accounts = config.upstream.accounts;
  if (!accounts) return undefined;
  const files: Record<string, string> = {};
  const problems: string[] = [];
  for (const [i, a] of accounts.entries()) {
    if (!a.apiKeyFile) continue;
    try {
      const v = (await readFile(a.apiKeyFile, "utf8")).trim();
      if (v) files[a.id] = v;
      else problems.push(`upstream.accounts[${i}].apiKeyFile: ${a.apiKeyFile} is empty`);
    } catch (err) {
      problems.push(
        `upstream.accounts[${i}].apiKeyFile: cannot read ${a.apiKeyFile}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      );
    }
  }
  if (problems.length) throw new ConfigError(problems, "environment");
  return accountApiKeysFromEnv(config, env, files);
}

/** The accounts' wallet keys on Node: walletKeyFile entries read from their files, the rest as accountWalletKeysFromEnv. */
export async function accountWalletKeys(
  config: TollgateConfig,
  env: Record<string, string | undefined>,
): Promise<Record<string, `0x${string}`> | undefined> {
  const accounts = config.upstream.accounts;
  if (!accounts?.some((a) => a.walletKeyEnv || a.walletKeyFile)) return undefined;
  const files: Record<string, string> = {};
  const problems: string[] = [];
  for (const [i, a] of accounts.entries()) {
    if (!a.walletKeyFile) continue;
    try {
      const v = (await readFile(a.walletKeyFile, "utf8")).trim();
      if (v) files[a.id] = v;
      else problems.push(`upstream.accounts[${i}].walletKeyFile: ${a.walletKeyFile} is empty`);
    } catch (err) {
      problems.push(
        `upstream.accounts[${i}].walletKeyFile: cannot read ${a.walletKeyFile}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      );
    }
  }
  if (problems.length) throw new ConfigError(problems, "environment");
  return accountWalletKeysFromEnv(config, env, files);
}
