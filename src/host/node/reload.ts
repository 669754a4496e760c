// Reload without a restart (Node; docs/config-as-code.md, docs/secrets.md): on SIGHUP, and when a file is seen to
// change (checked every `secrets.checkSeconds`), the secret files are read again and each changed secret handed to its
// holder (Gateway.rotateSecrets), and the config file is read again and its tenants applied as `tollgate apply` would
// (the file is the truth for what it names; audited as `system:config-reload`). A file that cannot be read or parsed is
// logged by its field and changes nothing: the gateway keeps serving with what it had.
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { ConfigError, parseConfigText, secretFileRefs, secretFromFile, type SecretFileRef, type Secrets } from "../../../config/load.js";
import type { TollgateConfig } from "../../../config/schema.js";
import type { Gateway, RotatableSecrets } from "../../gateway.js";
import { applyConfig } from "../../operators/actions/config-state.js";

/** The kid a token secret read from a file signs under: from its hash, so every instance names the same secret alike. */
const fileSecretKid = (secret: string) => `f-${createHash("sha256").update(secret).digest("hex").slice(0, 12)}`;

const reason = (err: unknown) => (err instanceof ConfigError ? err.problems.join("; ") : String((err as Error)?.message ?? err));

/** Reads every secret file named by `refs`; @throws ConfigError naming the field of each that cannot be read or is wrong. */
export async function readSecretFiles(refs: readonly SecretFileRef[]): Promise<Partial<Secrets>> {
  const out: Partial<Secrets> = {};
  const problems: string[] = [];
  for (const ref of refs) {
    try {
      const text = await readFile(ref.path, "utf8").catch((err: NodeJS.ErrnoException) => {
        throw new ConfigError([`${ref.field}: cannot read ${ref.path}: ${err.code ?? String(err)}`]);
      });
      Object.assign(out, secretFromFile(ref, text, fileSecretKid));
    } catch (err) {
      if (err instanceof ConfigError) problems.push(...err.problems);
      else throw err;
    }
  }
  if (problems.length) throw new ConfigError(problems, "secret files");
  return out;
}

/** An [[upstream.accounts]] entry's apiKeyFile (docs/accounts.md): re-read like the secret files, handed to its account. */
interface AccountKeyFile {
  account: string;
  path: string;
  /** `upstream.accounts[1].apiKeyFile`: named in every problem, never the key. */
  field: string;
}

const accountKeyFiles = (config: TollgateConfig): AccountKeyFile[] =>
  (config.upstream.accounts ?? []).flatMap((a, i) =>
    a.apiKeyFile ? [{ account: a.id, path: a.apiKeyFile, field: `upstream.accounts[${i}].apiKeyFile` }] : [],
  );

/** Reads each account's key file; @throws ConfigError naming the field of each that cannot be read or is empty. */
async function readAccountKeyFiles(files: readonly AccountKeyFile[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const problems: string[] = [];
  for (const f of files) {
    try {
      const v = (await readFile(f.path, "utf8")).trim();
      if (v) out[f.account] = v;
      else problems.push(`${f.field}: ${f.path} is empty`);
    } catch (err) {
      problems.push(`${f.field}: cannot read ${f.path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  }
  if (problems.length) throw new ConfigError(problems, "account key files");
  return out;
}

/** The top-level sections whose change takes a restart (everything but tenants and the secret files' contents). */
function staticChanges(before: TollgateConfig, after: TollgateConfig): string[] {
  const { tenants: _a, ...b } = before;
  const { tenants: _b, ...a } = after;
  return Object.keys({ ...a, ...b }).filter(
    (k) => JSON.stringify((b as Record<string, unknown>)[k]) !== JSON.stringify((a as Record<string, unknown>)[k]),
  );
}

export interface ReloadOptions {
  gateway: Gateway;
  config: TollgateConfig;
  /** The config file the gateway was started with; none: only the secret files are watched. */
  configFile?: string;
  /** The environment the secret files' `TOLLGATE_*_FILE` names were read from. */
  env: Record<string, string | undefined>;
}

export interface Reloader {
  /** Reads the files now (what SIGHUP does); resolves when done (never rejects: problems are logged). */
  reload(why: string): Promise<void>;
  stop(): void;
}

/**
 * Watches the config file and the secret files; nothing is started when there are neither. The first check reads what
 * the gateway was started with, so only a later change acts.
 */
export function watchForReload(opts: ReloadOptions): Reloader | undefined {
  const { gateway } = opts;
  const log = gateway.logger;
  // Its tenants are the file's: config as code refuses to change them and names the file (docs/config-as-code.md).
  if (opts.configFile) gateway.services.tenantSync.fileName = opts.configFile;
  let config = opts.config;
  let refs = secretFileRefs(config, opts.env);
  // The accounts' key files are fixed at start (upstream.accounts takes a restart); their contents are re-read.
  const accountFiles = accountKeyFiles(config);
  if (!opts.configFile && !refs.length && !accountFiles.length) return undefined;
  const seen = new Map<string, string>();
  let running: Promise<void> | undefined;

  /** The file's text when it changed since last seen (the first read only records it); undefined otherwise. */
  const changed = async (path: string, force: boolean): Promise<string | undefined> => {
    const text = await readFile(path, "utf8");
    const before = seen.get(path);
    seen.set(path, text);
    return before === undefined && !force ? undefined : before !== text || force ? text : undefined;
  };

  /** A reload's outcome where it is seen: tollgate_config_reload_failed, /_tollgate/ready's config check, the console's banner. */
  const reloaded = (ok: boolean, error?: string) => {
    gateway.services.configReload = { ok, at: gateway.services.now(), file: opts.configFile!, ...(error ? { error } : {}) };
    gateway.services.metrics.configReload(ok);
  };

  const reloadConfig = async (force: boolean, why: string) => {
    if (!opts.configFile) return;
    let text: string | undefined;
    try {
      text = await changed(opts.configFile, force);
      if (text === undefined) return;
      const next = parseConfigText(text, opts.configFile);
      const statics = staticChanges(config, next);
      if (statics.length) log.error("config reload: these sections changed and take a restart", { sections: statics.join(", ") });
      refs = secretFileRefs(next, opts.env);
      // Only the tenants whose block in the file changed since it was last read: a reload never undoes a change made
      // through the admin API or an apply to a tenant the file did not touch (docs/config-as-code.md).
      const before = new Map(config.tenants.map((t) => [t.id, JSON.stringify(t)]));
      const touched = next.tenants.filter((t) => before.get(t.id) !== JSON.stringify(t));
      config = next;
      // The file as started is seeded first (when no request has yet), so the new one's changes are applied, and audited.
      await gateway.services.tenantSync.refresh();
      gateway.services.tenantSync.setFileTenants(next.tenants);
      if (touched.length) {
        const plan = await applyConfig(
          gateway.services,
          { person: "system:config-reload" },
          { tenants: touched, ignored: [] },
          { origin: `${why} of ${opts.configFile}`, remember: false, holds: true },
        );
        const t = plan.sections.tenants;
        log.info("config reloaded", {
          why,
          created: t.changes.filter((c) => c.action === "create").length,
          updated: t.changes.filter((c) => c.action === "update").length,
          unchanged: t.unchanged + next.tenants.length - touched.length,
        });
      } else log.info("config reloaded", { why, tenants: next.tenants.length, changed: 0 });
      reloaded(true);
    } catch (err) {
      log.error("config reload failed; serving with the config as it was", { why, file: opts.configFile, error: reason(err) });
      reloaded(false, reason(err));
    }
  };

  const reloadSecrets = async (force: boolean, why: string) => {
    let any = force;
    for (const ref of [...refs, ...accountFiles]) {
      try {
        if ((await changed(ref.path, false)) !== undefined) any = true;
      } catch {
        any = true; // reported by the read below, by its field
      }
    }
    if (!any) return;
    try {
      const next = (await readSecretFiles(refs)) as RotatableSecrets;
      if (accountFiles.length) next.accountApiKeys = await readAccountKeyFiles(accountFiles);
      const rotated = gateway.rotateSecrets(next, config.secrets.tokenGraceSeconds * 1000);
      if (rotated.length) log.info("secrets re-read from their files", { why, rotated: rotated.join(", ") });
    } catch (err) {
      log.error("secret files: keeping the secrets as they were", { why, error: reason(err) });
    }
  };

  let queued: Promise<void> | undefined;
  /** One pass at a time; a forced one (SIGHUP) asked for during another runs right after it, and is what it resolves. */
  const pass = (force: boolean, why: string): Promise<void> => {
    if (running) {
      if (!force) return running;
      queued ??= running.then(() => {
        queued = undefined;
        return pass(true, why);
      });
      return queued;
    }
    running = (async () => {
      await reloadConfig(force, why);
      await reloadSecrets(force, why);
    })().finally(() => {
      running = undefined;
    });
    return running;
  };

  void pass(false, "start");
  const timer = setInterval(() => void pass(false, "file change"), config.secrets.checkSeconds * 1000);
  timer.unref();
  const onHup = () => void pass(true, "SIGHUP");
  process.on("SIGHUP", onHup);
  return {
    reload: (why) => pass(true, why),
    stop() {
      clearInterval(timer);
      process.off("SIGHUP", onHup);
    },
  };
}
