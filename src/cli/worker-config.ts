// `tollgate config render --worker FILE` and `tollgate config check --worker FILE`: the same config file that
// `tollgate start` runs, made into the Worker's configuration without hand work (docs/deploying.md#workers): the
// TOLLGATE_CONFIG var (the file as JSON) and the secrets to bind. What only the Node entry can do (files, Redis, a
// PKCS#11 or remote signer) is named by its field.
import { ConfigError, refuseSecretFiles, SECRET_ENV } from "../../config/load.js";
import type { TollgateConfig } from "../../config/schema.js";

/** What the Worker cannot run, each by its field. */
export function workerProblems(config: TollgateConfig): string[] {
  const problems: string[] = [];
  try {
    refuseSecretFiles(config);
  } catch (err) {
    if (err instanceof ConfigError) problems.push(...err.problems);
    else throw err;
  }
  if (config.state.backend !== "durable-objects")
    problems.push(
      `state.backend: "${config.state.backend}" is for the Node entry; on Workers use "durable-objects" (wrangler.toml binds TOLLGATE_STATE)`,
    );
  if (config.wallet.signer !== "local")
    problems.push(`wallet.signer: "${config.wallet.signer}" is opened by the Node entry; on Workers the wallet key is a secret binding`);
  for (const [i, a] of (config.upstream.accounts ?? []).entries()) {
    if (a.apiKeyFile)
      problems.push(`upstream.accounts[${i}].apiKeyFile: files cannot be read on Workers; use apiKeyEnv with a secret binding`);
    if (a.walletKeyFile)
      problems.push(`upstream.accounts[${i}].walletKeyFile: files cannot be read on Workers; use walletKeyEnv with a secret binding`);
    if (a.walletSigner) problems.push(`upstream.accounts[${i}].walletSigner: a remote signer is opened by the Node entry only`);
  }
  if (config.operators.oidc?.clientSecretFile)
    problems.push("operators.oidc.clientSecretFile: files cannot be read on Workers; use clientSecretEnv with a secret binding");
  if (config.tracing.otlpEndpoint) problems.push("tracing.otlpEndpoint: OTLP export runs on the Node entry only; unset it for the Worker");
  return problems;
}

/** The secret bindings the Worker reads for this config (names only). */
function workerSecrets(config: TollgateConfig): string[] {
  const out = new Set<string>([SECRET_ENV.tokenSecret]);
  const accounts = config.upstream.accounts;
  if (accounts) for (const a of accounts) for (const v of [a.apiKeyEnv, a.walletKeyEnv]) v && out.add(v);
  else out.add(SECRET_ENV.upstreamApiKey);
  if (config.payments.enabled && config.wallet.signer === "local") out.add(SECRET_ENV.walletKey);
  if (config.operators.oidc?.clientSecretEnv) out.add(config.operators.oidc.clientSecretEnv);
  return [...out];
}

/** The wrangler.toml lines: `[vars] TOLLGATE_CONFIG` (the file as written, as JSON) and the secrets to put. */
export function renderWorker(raw: unknown, config: TollgateConfig, file: string): string {
  const json = JSON.stringify(raw);
  return [
    `# The Worker's configuration for ${file} (tollgate config render --worker); paste into wrangler.toml.`,
    "# TOLLGATE_CONFIG holds the tenants' key hashes: keep it a var in a private repository, or put it as a secret.",
    "[vars]",
    // A TOML basic string: JSON's own string escapes are TOML's.
    `TOLLGATE_CONFIG = ${JSON.stringify(json)}`,
    "",
    "# The secrets, bound once (their values never go in wrangler.toml):",
    ...workerSecrets(config).map((s) => `#   npx wrangler secret put ${s}`),
    "",
  ].join("\n");
}
