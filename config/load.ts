// Loads a TOML or JSON config file plus secrets from the environment, and reports every problem by its path.
import { parse as parseToml } from "smol-toml";
import type * as z from "zod";
import { configSchema, type TollgateConfig } from "./schema.js";

export interface Secrets {
  /** The upstream service's API key (TOLLGATE_UPSTREAM_API_KEY). */
  upstreamApiKey?: string;
  /** The payer wallet's private key (TOLLGATE_WALLET_KEY), 0x + 64 hex. */
  walletKey?: `0x${string}`;
  /** Secret that signs Tollgate's own tokens (TOLLGATE_TOKEN_SECRET), at least 32 characters; its kid is "default". */
  tokenSecret?: string;
  /**
   * Several token secrets with ids (TOLLGATE_TOKEN_SECRETS="kid1:secret1,kid2:secret2"): the first signs, the rest
   * still verify the tokens they signed until removed. Takes the place of tokenSecret.
   */
  tokenSecrets?: Array<{ kid: string; secret: string }>;
  /**
   * The keys that seal tenant secrets at rest (TOLLGATE_SECRET_KEYS="kid1:secret1,kid2:secret2", each secret 32+
   * characters): the first seals, every listed one opens what it sealed. Unset: the token secrets seal them.
   */
  secretKeys?: Array<{ kid: string; secret: string }>;
  /** Bearer token that may read /_tollgate/metrics without a tenant key (TOLLGATE_METRICS_TOKEN), at least 16 characters. */
  metricsToken?: string;
  /** Secret that signs alert webhooks (TOLLGATE_WEBHOOK_SECRET); receivers check the `tollgate-signature` header. */
  webhookSecret?: string;
  /** The user PIN of the PKCS#11 token holding the wallet key (TOLLGATE_PKCS11_PIN), with `[wallet] signer = "pkcs11"`. */
  pkcs11Pin?: string;
  /** The OIDC client's secret, read from where [operators.oidc] says (clientSecretEnv or clientSecretFile). */
  oidcClientSecret?: string;
  /** Each [[upstream.accounts]] entry's API key by account id, read from its apiKeyEnv or apiKeyFile. */
  accountApiKeys?: Record<string, string>;
  /** The wallet keys of the [[upstream.accounts]] entries that have one (walletKeyEnv or walletKeyFile), by account id. */
  accountWalletKeys?: Record<string, `0x${string}`>;
}

export const SECRET_ENV = {
  upstreamApiKey: "TOLLGATE_UPSTREAM_API_KEY",
  walletKey: "TOLLGATE_WALLET_KEY",
  tokenSecret: "TOLLGATE_TOKEN_SECRET",
  tokenSecrets: "TOLLGATE_TOKEN_SECRETS",
  metricsToken: "TOLLGATE_METRICS_TOKEN",
  webhookSecret: "TOLLGATE_WEBHOOK_SECRET",
  pkcs11Pin: "TOLLGATE_PKCS11_PIN",
  secretKeys: "TOLLGATE_SECRET_KEYS",
} as const;

const KID = /^[A-Za-z0-9._-]{1,64}$/;

/** `kid1:secret1,kid2:secret2` → entries, with every problem named (never the secret itself). */
function parseTokenSecrets(
  raw: string,
  problems: string[],
  name: string = SECRET_ENV.tokenSecrets,
): Array<{ kid: string; secret: string }> | undefined {
  const out: Array<{ kid: string; secret: string }> = [];
  for (const [i, entry] of raw.split(",").entries()) {
    const at = entry.indexOf(":");
    const kid = at > 0 ? entry.slice(0, at).trim() : "";
    const secret = at > 0 ? entry.slice(at + 1).trim() : "";
    if (!KID.test(kid)) problems.push(`${name}[${i}]: expected "kid:secret" with a kid of letters, digits, '.', '_' or '-'`);
    else if (secret.length < 32) problems.push(`${name}[${i}] (kid "${kid}"): expected a secret of at least 32 characters`);
    else if (out.some((e) => e.kid === kid)) problems.push(`${name}[${i}]: duplicate kid "${kid}"`);
    else out.push({ kid, secret });
  }

  return out.length ? out : undefined;
}

/** Every problem found, one per line, each starting with the exact path of the field. */
export class ConfigError extends Error {
  constructor(
    public readonly problems: string[],
    source = "configuration",
  ) {
    super(`${source} is invalid:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = "";
  for (const seg of path) {
    if (typeof seg === "number") out += `[${seg}]`;
    else out += out ? `.${String(seg)}` : String(seg);
  }
  return out || "(root)";
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const where = formatPath(issue.path);
  if (issue.code === "unrecognized_keys") {
    return issue.keys
      .map((k) => `${where === "(root)" ? k : `${where}.${k}`}: unknown option (check the spelling against config/tollgate.example.toml)`)
      .join("\n");
  }
  if (issue.code === "invalid_type" && issue.input === undefined && "input" in issue) return `${where}: required, ${issue.message}`;
  // zod's own messages for enum/union mismatches already say what was expected.
  return `${where}: ${issue.message}`;
}

/**
 * Cross-field rules the schema cannot say field by field. Read from the raw input (any tenant with a string id, any
 * key with a string hash), so they are reported in the same pass as the schema's problems.
 */
export function semanticProblems(raw: unknown): string[] {
  const problems: string[] = [];
  const tenants = (raw as { tenants?: unknown } | null)?.tenants;
  if (!Array.isArray(tenants)) return problems;
  const seenTenant = new Map<string, number>();
  const seenHash = new Map<string, string>();
  tenants.forEach((t: { id?: unknown; keys?: unknown } | null, i) => {
    const id = t?.id;
    if (typeof id === "string") {
      if (seenTenant.has(id)) problems.push(`tenants[${i}].id: duplicate tenant id "${id}" (also tenants[${seenTenant.get(id)}])`);
      else seenTenant.set(id, i);
    }
    if (!Array.isArray(t?.keys)) return;
    t.keys.forEach((k: { hash?: unknown } | null, j: number) => {
      if (typeof k?.hash !== "string") return;
      const prev = seenHash.get(k.hash);
      if (prev) problems.push(`tenants[${i}].keys[${j}].hash: the same key is already used by ${prev}`);
      else seenHash.set(k.hash, `tenants[${i}].keys[${j}]`);
    });
  });
  return problems;
}

/** Validates an already-parsed object; throws ConfigError listing every problem (schema and cross-field) in one pass. */
export function parseConfig(raw: unknown, source = "configuration"): TollgateConfig {
  const result = configSchema.safeParse(raw, { reportInput: true });
  const problems = [...(result.success ? [] : result.error.issues.flatMap((i) => describeIssue(i).split("\n"))), ...semanticProblems(raw)];
  if (problems.length || !result.success) throw new ConfigError(problems, source);
  return result.data;
}

/** Parses TOML (or JSON when the text starts with `{` or the name ends in .json). */
export function parseConfigText(text: string, fileName = "config.toml"): TollgateConfig {
  return parseConfigSource(text, fileName).config;
}

/** parseConfigText, with the object as written (before defaults): what `start` and `config check` read of the file's own words. */
export function parseConfigSource(text: string, fileName = "config.toml"): { raw: unknown; config: TollgateConfig } {
  let raw: unknown;
  try {
    raw = fileName.endsWith(".json") || text.trimStart().startsWith("{") ? JSON.parse(text) : parseToml(text);
  } catch (err) {
    const msg = err instanceof Error ? err.message.split("\n")[0] : String(err);
    // smol-toml's TomlError says where (1-based line and column); JSON.parse's message says it itself.
    const { line, column } = err as { line?: unknown; column?: unknown };
    const at = typeof line === "number" && typeof column === "number" ? `:${line}:${column}` : "";
    throw new ConfigError([`(file): cannot parse ${fileName}${at}: ${msg}`], fileName);
  }
  return { raw, config: parseConfig(raw, fileName) };
}

/** Reads the secrets from an environment object (process.env on Node, `env` bindings on Workers). */
export function secretsFromEnv(env: Record<string, string | undefined>): Secrets {
  const problems: string[] = [];
  const walletKey = env[SECRET_ENV.walletKey]?.trim();
  if (walletKey && !/^0x[0-9a-fA-F]{64}$/.test(walletKey))
    problems.push(`${SECRET_ENV.walletKey}: expected 0x followed by 64 hex characters`);
  const tokenSecret = env[SECRET_ENV.tokenSecret];
  if (tokenSecret !== undefined && tokenSecret.length < 32) problems.push(`${SECRET_ENV.tokenSecret}: expected at least 32 characters`);
  const rawSecrets = env[SECRET_ENV.tokenSecrets]?.trim();
  const tokenSecrets = rawSecrets ? parseTokenSecrets(rawSecrets, problems) : undefined;
  if (rawSecrets && tokenSecret) {
    problems.push(
      `${SECRET_ENV.tokenSecrets}: set either it or ${SECRET_ENV.tokenSecret}, not both (list the old secret as "default:<secret>" to keep its tokens valid)`,
    );
  }
  const rawKeys = env[SECRET_ENV.secretKeys]?.trim();
  const secretKeys = rawKeys ? parseTokenSecrets(rawKeys, problems, SECRET_ENV.secretKeys) : undefined;
  const metricsToken = env[SECRET_ENV.metricsToken]?.trim();
  if (metricsToken && metricsToken.length < 16) problems.push(`${SECRET_ENV.metricsToken}: expected at least 16 characters`);
  if (problems.length) throw new ConfigError(problems, "environment");
  return {
    upstreamApiKey: env[SECRET_ENV.upstreamApiKey]?.trim() || undefined,
    walletKey: (walletKey || undefined) as `0x${string}` | undefined,
    tokenSecret: tokenSecret || undefined,
    ...(tokenSecrets ? { tokenSecrets } : {}),
    ...(secretKeys ? { secretKeys } : {}),
    metricsToken: metricsToken || undefined,
    webhookSecret: env[SECRET_ENV.webhookSecret] || undefined,
    pkcs11Pin: env[SECRET_ENV.pkcs11Pin] || undefined,
  };
}

/**
 * The OIDC client secret from where [operators.oidc] says: an environment variable (process.env on Node, a secret
 * binding on Workers) or, on Node, a file (oidcClientSecret). A problem names the config field, never the secret.
 */
export function oidcClientSecretFromEnv(config: TollgateConfig, env: Record<string, string | undefined>): string | undefined {
  const oidc = config.operators.oidc;
  if (!oidc) return undefined;
  if (oidc.clientSecretFile)
    throw new ConfigError(["operators.oidc.clientSecretFile: files cannot be read here; use clientSecretEnv with a secret binding"]);
  if (!oidc.clientSecretEnv) return undefined;
  const v = env[oidc.clientSecretEnv]?.trim();
  if (!v) throw new ConfigError([`operators.oidc.clientSecretEnv: the environment variable ${oidc.clientSecretEnv} is not set`]);
  return v;
}

/**
 * The API key of each [[upstream.accounts]] entry, from its apiKeyEnv (process.env on Node, a secret binding on
 * Workers); an apiKeyFile cannot be read here. Undefined without accounts. A problem names the account's field, never
 * the key. `files` holds what the Node entry read from apiKeyFile entries.
 */
export function accountApiKeysFromEnv(
  config: TollgateConfig,
  env: Record<string, string | undefined>,
  files: Record<string, string> = {},
): Record<string, string> | undefined {
  const accounts = config.upstream.accounts;
  if (!accounts) return undefined;
  const problems: string[] = [];
  const keys: Record<string, string> = {};
  accounts.forEach((a, i) => {
    if (a.apiKeyFile) {
      const v = files[a.id];
      if (v) keys[a.id] = v;
      else problems.push(`upstream.accounts[${i}].apiKeyFile: files cannot be read here; use apiKeyEnv with a secret binding`);
      return;
    }
    const v = env[a.apiKeyEnv!]?.trim();
    if (v) keys[a.id] = v;
    else problems.push(`upstream.accounts[${i}].apiKeyEnv: the environment variable ${a.apiKeyEnv} (account "${a.id}") is not set`);
  });
  if (problems.length) throw new ConfigError(problems, "environment");
  return keys;
}

const WALLET_KEY = /^0x[0-9a-fA-F]{64}$/;

/**
 * The wallet key of each [[upstream.accounts]] entry that names one, from its walletKeyEnv (process.env on Node, a
 * secret binding on Workers); a walletKeyFile cannot be read here. Undefined when no account has a wallet. A problem
 * names the account's field, never the key. `files` holds what the Node entry read from walletKeyFile entries.
 */
export function accountWalletKeysFromEnv(
  config: TollgateConfig,
  env: Record<string, string | undefined>,
  files: Record<string, string> = {},
): Record<string, `0x${string}`> | undefined {
  const accounts = config.upstream.accounts?.filter((a) => a.walletKeyEnv || a.walletKeyFile);
  if (!accounts?.length) return undefined;
  const problems: string[] = [];
  const keys: Record<string, `0x${string}`> = {};
  config.upstream.accounts!.forEach((a, i) => {
    if (!a.walletKeyEnv && !a.walletKeyFile) return;
    const field = `upstream.accounts[${i}].${a.walletKeyFile ? "walletKeyFile" : "walletKeyEnv"}`;
    const v = a.walletKeyFile ? files[a.id] : env[a.walletKeyEnv!]?.trim();
    if (!v) {
      problems.push(
        a.walletKeyFile
          ? `${field}: files cannot be read here; use walletKeyEnv with a secret binding`
          : `${field}: the environment variable ${a.walletKeyEnv} (account "${a.id}") is not set`,
      );
      return;
    }
    if (!WALLET_KEY.test(v)) problems.push(`${field}: expected 0x followed by 64 hex characters (account "${a.id}")`);
    else keys[a.id] = v as `0x${string}`;
  });
  if (problems.length) throw new ConfigError(problems, "environment");
  return keys;
}

/** The secrets a file may hold, by their config field; each also takes `<its variable>_FILE` in the environment. */
const SECRET_FILE_FIELDS = {
  upstreamApiKeyFile: "upstreamApiKey",
  tokenSecretFile: "tokenSecret",
  webhookSecretFile: "webhookSecret",
  metricsTokenFile: "metricsToken",
  walletKeyFile: "walletKey",
  pkcs11PinFile: "pkcs11Pin",
} as const;

/** One secret given as a file: which secret, the file, and where that was said (the config field or the variable). */
export interface SecretFileRef {
  secret: (typeof SECRET_FILE_FIELDS)[keyof typeof SECRET_FILE_FIELDS];
  path: string;
  /** `secrets.upstreamApiKeyFile` or `TOLLGATE_UPSTREAM_API_KEY_FILE`: named in every problem, never the secret. */
  field: string;
}

/**
 * The secrets given as files, from `[secrets] *File` and `TOLLGATE_*_FILE`. A secret given twice (a file and its
 * variable, or a field and a `_FILE` variable) is a config error naming both. TOLLGATE_TOKEN_SECRETS counts as the
 * token secret's variable.
 */
export function secretFileRefs(config: TollgateConfig, env: Record<string, string | undefined>): SecretFileRef[] {
  const problems: string[] = [];
  const refs: SecretFileRef[] = [];
  for (const [field, secret] of Object.entries(SECRET_FILE_FIELDS) as Array<[keyof typeof SECRET_FILE_FIELDS, SecretFileRef["secret"]]>) {
    const variable = SECRET_ENV[secret];
    const fromConfig = config.secrets[field];
    const fromEnv = env[`${variable}_FILE`]?.trim() || undefined;
    const direct = [variable, ...(secret === "tokenSecret" ? [SECRET_ENV.tokenSecrets] : [])].filter((v) => env[v]?.trim());
    if (fromConfig && fromEnv) problems.push(`secrets.${field}: also given as ${variable}_FILE; keep one`);
    else if ((fromConfig || fromEnv) && direct.length)
      problems.push(`${fromConfig ? `secrets.${field}` : `${variable}_FILE`}: ${direct.join(" and ")} is set too; keep one`);
    else if (fromConfig) refs.push({ secret, path: fromConfig, field: `secrets.${field}` });
    else if (fromEnv) refs.push({ secret, path: fromEnv, field: `${variable}_FILE` });
  }
  if (problems.length) throw new ConfigError(problems, "configuration");
  return refs;
}

/**
 * A secret file's content as the secret it holds (trimmed), checked as its variable would be. The token secret's file
 * holds one secret or a "kid:secret,…" list; a lone secret signs under a kid made from its own hash (`kidOf`), so every
 * instance names the same secret alike. @throws ConfigError naming the field, never the secret.
 */
export function secretFromFile(ref: SecretFileRef, text: string, kidOf: (secret: string) => string): Partial<Secrets> {
  const v = text.trim();
  const problems: string[] = [];
  if (!v) problems.push(`${ref.field}: ${ref.path} is empty`);
  else if (ref.secret === "tokenSecret") {
    // A "kid:secret,…" list when every entry reads as one; anything else is one secret.
    const isList = v.split(",").every((e) => /^\s*[A-Za-z0-9._-]{1,64}:\S{32,}\s*$/.test(e));
    const list = isList ? parseTokenSecrets(v, problems) : undefined;
    if (list) return { tokenSecrets: list };
    if (!problems.length && v.length < 32) problems.push(`${ref.field}: expected a secret of at least 32 characters`);
    if (!problems.length) return { tokenSecrets: [{ kid: kidOf(v), secret: v }] };
  } else if (ref.secret === "walletKey" && !/^0x[0-9a-fA-F]{64}$/.test(v))
    problems.push(`${ref.field}: expected 0x followed by 64 hex characters`);
  else if (ref.secret === "metricsToken" && v.length < 16) problems.push(`${ref.field}: expected at least 16 characters`);
  if (problems.length)
    throw new ConfigError(
      problems.map((p) => p.replace(SECRET_ENV.tokenSecrets, ref.field)),
      "secret file",
    );
  return { [ref.secret]: v };
}

/** Workers read no files: a `[secrets] *File` field there is a config error saying to bind the secret instead. */
export function refuseSecretFiles(config: TollgateConfig): void {
  const problems = (Object.keys(SECRET_FILE_FIELDS) as Array<keyof typeof SECRET_FILE_FIELDS>)
    .filter((field) => config.secrets[field])
    .map(
      (field) =>
        `secrets.${field}: files cannot be read on Workers; bind the secret instead (wrangler secret put ${SECRET_ENV[SECRET_FILE_FIELDS[field]]})`,
    );
  if (problems.length) throw new ConfigError(problems);
}
