// What `tollgate start` says before and after it listens: it refuses a file that would keep money in memory without
// saying so (docs/deploying.md#state), and prints what it runs with (state, wallet or signer, accounts, origin, watched
// files) so an operator reading the first lines of the log knows which gateway this is.
import type { TollgateConfig } from "../../config/schema.js";

const ADD_STATE = `Add to the file, for production (spend, tenants, keys and grants kept across restarts and shared by a fleet):

  [state]
  backend = "redis"
  redisUrl = "redis://127.0.0.1:6379"

or, to rehearse only (everything is lost when the process stops, and each budget starts over):

  [state]
  backend = "memory"
  rehearsal = true`;

/**
 * Why `start` refuses the file's state, or undefined. `raw`: the file as written (before defaults), so a missing
 * `[state]` is told apart from one that says memory.
 */
export function stateRefusal(raw: unknown, config: TollgateConfig, file: string): string | undefined {
  const written = (raw as { state?: unknown } | null)?.state;
  if (written === undefined)
    return `tollgate start: ${file} has no [state], so every budget's spend, the tenants and keys made through the admin API, OAuth grants and the audit would live in this process's memory: a restart forgets them, and a budget starting over lets money be spent twice.\n\n${ADD_STATE}`;
  if (config.state.backend === "memory" && !config.state.rehearsal)
    return `tollgate start: ${file}: state.backend is "memory" without state.rehearsal = true: a restart would forget every budget's spend, tenants, keys, grants and the audit.\n\n${ADD_STATE}`;
  return undefined;
}

/** A Redis URL without its credentials: `redis://host:port/db`. */
function redisWhere(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname === "/" ? "" : u.pathname}`;
  } catch {
    return "(a redis URL)";
  }
}

export interface StartFacts {
  url: string;
  config: TollgateConfig;
  configFile: string;
  /** The gateway's wallet address, when it has one (the key never). */
  wallet?: string;
  /** The accounts' own wallets. */
  accountWallets?: Array<{ account: string; address: string }>;
  /** The secret files watched beside the config file. */
  secretFiles: string[];
}

/** The lines `start` prints once it listens (after "listening on …"). No secret: addresses, hosts and file names only. */
export function startSummary(f: StartFacts): string[] {
  const { config } = f;
  const s = config.state;
  const state =
    s.backend === "redis"
      ? `redis ${s.redisUrl ? redisWhere(s.redisUrl) : s.sentinels ? `sentinels ${s.sentinels.join(",")} (${s.sentinelName})` : `cluster ${(s.clusterNodes ?? []).join(",")}`}`
      : s.backend === "memory"
        ? "memory (REHEARSAL: lost when this process stops; state.rehearsal = true)"
        : s.backend;
  const signer = config.wallet.signer;
  const wallet = !config.payments.enabled
    ? "payments disabled"
    : f.wallet
      ? `${f.wallet} (${signer === "local" ? "TOLLGATE_WALLET_KEY" : `${signer} signer`})`
      : "none: x402 calls answer 503 (set TOLLGATE_WALLET_KEY or [wallet] signer)";
  const accounts = config.upstream.accounts
    ? config.upstream.accounts
        .map((a) => {
          const own = f.accountWallets?.find((w) => w.account === a.id);
          return `${a.id} (weight ${a.weight}${own ? `, wallet ${own.address}` : ""})`;
        })
        .join(", ")
    : "one (TOLLGATE_UPSTREAM_API_KEY)";
  const origin = config.server.publicOrigin ?? `none set; answering Host ${(config.server.publicHosts ?? []).join(", ")}`;
  const watched = [f.configFile, ...f.secretFiles].join(", ");
  return [
    `  state     ${state}`,
    `  wallet    ${wallet}`,
    `  accounts  ${accounts}`,
    `  origin    ${origin}`,
    `  tenants   ${config.tenants.length} in the file`,
    `  watching  ${watched} (SIGHUP reloads)`,
  ];
}

/** A key hash the examples carry (`sha256:000…01`): a placeholder to paste over, never a key's hash. */
const PLACEHOLDER_HASH = /^sha256:0{56}[0-9a-f]{0,8}$/;

/**
 * What `config check` finds doubtful beyond the schema: `errors` (placeholder key hashes, no admin, an OTLP endpoint
 * that is no HTTP URL) fail the check; `warnings` are printed and pass (no tenants in the file, no [state], a memory
 * rehearsal, no publicOrigin). Each names its field.
 */
export function configDoubts(raw: unknown, config: TollgateConfig): { errors: string[]; warnings: string[] } {
  const errors: string[] = [];
  const warnings: string[] = [];
  for (const [i, t] of config.tenants.entries())
    for (const [j, k] of t.keys.entries())
      if (PLACEHOLDER_HASH.test(k.hash))
        errors.push(
          `tenants[${i}].keys[${j}].hash: "${k.hash.slice(0, 14)}…" is the example's placeholder, not a key's hash: run \`tollgate keys create --tenant ${t.id}\` and paste the line it prints`,
        );
  const ops = config.operators;
  const adminBySignIn = !!(ops.oidc?.roles.admin.length || ops.access);
  if (!config.tenants.some((t) => t.scopes.includes("admin")) && !adminBySignIn)
    errors.push(
      'tenants: none has the "admin" scope (and no [operators] sign-in gives the admin role): nobody could use the admin API, the console or the metrics. Add one: `tollgate keys create --tenant ops`, with scopes = ["admin"]',
    );
  const otlp = config.tracing.otlpEndpoint;
  if (otlp && !/^https?:\/\//i.test(otlp))
    errors.push(`tracing.otlpEndpoint: "${otlp}" has no http:// or https:// scheme (expected e.g. "http://127.0.0.1:4318/v1/traces")`);
  for (const [i, t] of config.tenants.entries())
    if (!t.keys.length)
      warnings.push(
        `tenants[${i}].keys: none: no key of "${t.id}" works (its OAuth grants do); run \`tollgate keys create --tenant ${t.id}\` for one`,
      );
  if (!config.tenants.length)
    warnings.push("tenants: none in the file: every tenant comes from the admin API or `tollgate apply`, kept in [state]");
  if ((raw as { state?: unknown } | null)?.state === undefined)
    warnings.push(
      'state: none: `tollgate start` refuses this file (add [state] with backend = "redis" and redisUrl, or a memory rehearsal)',
    );
  else if (config.state.backend === "memory")
    warnings.push(
      config.state.rehearsal
        ? "state.rehearsal: memory, for a rehearsal: spend, tenants, keys and grants are lost when the process stops"
        : 'state.backend: "memory" without rehearsal = true: `tollgate start` refuses it',
    );
  if (!config.server.publicOrigin && !config.server.publicHosts)
    warnings.push("server.publicOrigin: unset: `tollgate start` answers loopback names only (set it to where clients reach the gateway)");
  return { errors, warnings };
}
