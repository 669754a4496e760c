// `tollgate` command line: dev (embedded default), start (real upstream), emulator, config check, keys and tenants.
import { createWriteStream } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

// Each command loads what it uses when it runs (the config schema and zod, the identity code, the admin client): `tollgate
// --help` and the admin commands start with Node's own modules only (docs/operating.md has the figures).
const configLoader = () => import("../../config/load.js");
const configFiles = () => import("../../config/load-node.js");
const adminCli = () => import("./admin.js");
const creditsCli = () => import("./credits.js");
const configFileCli = () => import("./config-file.js");
/** The errors a command reports as a plain message (ConfigError, AdminCliError), known by name: neither is loaded yet. */
const isUserError = (err: unknown): err is Error => err instanceof Error && (err.name === "ConfigError" || err.name === "AdminCliError");

const USAGE = `tollgate — an x402-paying, credential-holding gateway

Usage:
  tollgate --version                        the version (CHANGELOG.md; upgrading: docs/upgrading.md)
  tollgate dev [--json] [--port N]          local chain + emulator + gateway, demo tenants (no credentials needed)
  tollgate dev --worker [--json]            the same, with the gateway as the Worker under \`wrangler dev\` (workerd)
  tollgate start --config FILE              front the real upstream (secrets from TOLLGATE_* variables or files);
                                            SIGHUP (or FILE changing) reloads its tenants and the secret files
  tollgate emulator [--json] [--control-port N] [--runtime-port N] [--no-chain] [--host H] [--credits JSON]
  tollgate config check [--worker] FILE     validate a config file, listing every problem (--worker: as the Worker runs it)
  tollgate config render --worker FILE      the Worker's configuration for FILE: TOLLGATE_CONFIG and the secrets to bind
  tollgate state migrate --config FILE      a Redis Cluster's ledger moved to the per-tenant layout (gateways stopped)
  tollgate keys create --tenant ID          offline: prints a key and the hash line for the config file
                       [--expires ISO] [--label TEXT]
  tollgate routes                           the route table: every upstream operation Tollgate fronts (markdown)
  tollgate signer keygen --token LABEL      the wallet's key made inside a PKCS#11 token (PIN: TOLLGATE_PKCS11_PIN)
                         [--label KEY_LABEL] [--module PATH]
  tollgate signer serve --socket PATH --state FILE --networks … --assets … [--payees …]
                        --max-per-authorization USD --max-per-day USD   the key in a process of its own, with limits
  tollgate wallet approve --network eip155:N --asset 0x… (--rpc URL | --config FILE) [--amount USD] [--print]
                          [--account ID]    the one-time Permit2 approval (exact over Permit2, upto); key: TOLLGATE_WALLET_KEY,
                                            or with --account (and --config) that upstream account's wallet
  tollgate wallet allowance --network eip155:N --asset 0x… (--rpc URL | --config FILE) [--owner 0x…] [--account ID]

Against a running gateway (--gateway URL --admin-key KEY, or TOLLGATE_GATEWAY / TOLLGATE_ADMIN_KEY):
  tollgate tenants list|get ID|audit
  tollgate tenants create ID [--scopes a,b] [--daily USD] [--monthly USD] [--total USD] [--on-exhausted block|stop]
                             [--rpm N] [--max-sandboxes N] [--max-sessions N] [--set JSON] [--label TEXT] [--expires ISO]
  tollgate tenants update ID [the same settings flags]
  tollgate tenants disable|enable|delete ID
  tollgate keys create --tenant ID [--label TEXT] [--expires ISO]
  tollgate keys rotate --tenant ID --key KEY_ID [--grace SECONDS] [--expires ISO]
  tollgate keys revoke --tenant ID --key KEY_ID
  tollgate keys expire --tenant ID --key KEY_ID --expires ISO
  tollgate export [--out FILE] [--json]     the live state (tenants, key hashes, budgets, policies, quotas, alerts)
                                            in the config file's shape (docs/config-as-code.md)
  tollgate diff FILE [--prune] [--exit-code]  what applying FILE would change (--exit-code: 1 when it differs)
  tollgate apply FILE [--prune]             make the fleet match what FILE names (--prune: delete what it does not)
  tollgate console link [--ttl SECONDS]     a one-time console sign-in URL (the key never goes in a URL)
  tollgate secrets put NAME --host HOST     a tenant secret (no --tenant: the key's own tenant's); its value from
                                            stdin, a hidden prompt or --value-file FILE, never an argument
                       [--host HOST[:PORT] …] [--method M] [--path /P] [--header H] [--format "Bearer {}"]
                       [--sandboxes all|on-request] [--value-file FILE] [--tenant ID]
  tollgate secrets list [--tenant ID]       name, hosts, methods, paths, header, updated, last used (never a value)
  tollgate secrets get|rm NAME [--tenant ID]  one secret's rules, or delete it (placeholders refused fleet-wide at once)
  tollgate usage export [--from DATE]       spend by tenant, day, kind and route row
                        [--to DATE (that day included)] [--format csv|json]
  tollgate credits calibrate [--from ISO] [--to ISO] [--json]         a price table from what the upstream reported
`;

/** What the emulator's printed wallet holds: 100 tokens of 6 decimals. */
const EMULATOR_WALLET_FUNDS = 100_000_000n;

function fail(msg: string, code = 1): never {
  process.stderr.write(msg.endsWith("\n") ? msg : msg + "\n");
  process.exit(code);
}

/**
 * The CLI's own lines (listening, draining, drained): plain text on stderr, or, with TOLLGATE_LOG_FORMAT=json (set by
 * the image and the systemd unit), JSON objects on stdout shaped like the request log's, so a collector reads one stream.
 */
function say(msg: string, level: "info" | "error" = "info") {
  if (process.env.TOLLGATE_LOG_FORMAT === "json")
    process.stdout.write(JSON.stringify({ time: new Date().toISOString(), level, msg }) + "\n");
  else process.stderr.write(msg.endsWith("\n") ? msg : msg + "\n");
}

/** Runs `close` on the first Ctrl-C or SIGTERM; a second one exits at once. Whatever hangs past `limitMs` is abandoned. */
function onShutdown(close: () => Promise<void>, quiet = false, limitMs = 15_000) {
  let closing = false;
  const handler = (sig: string) => {
    if (closing) process.exit(130);
    closing = true;
    if (!quiet) say(`${process.env.TOLLGATE_LOG_FORMAT === "json" ? "" : "\n"}${sig}: shutting down…`);
    // Never hang on the way out: whatever is still open after the limit is abandoned.
    setTimeout(() => {
      say("shutdown took too long; exiting anyway", "error");
      process.exit(1);
    }, limitMs).unref();
    close().then(
      () => process.exit(0),
      (e) => fail(`shutdown failed: ${e}`),
    );
  };
  process.on("SIGINT", () => handler("SIGINT"));
  process.on("SIGTERM", () => handler("SIGTERM"));
}

/** `dev --json` keeps stdout to one line; the gateway's and the emulator's logs go to this file, named in that line. */
function devLogFile() {
  const path = join(tmpdir(), `tollgate-dev-${new Date().toISOString().replace(/[:.]/g, "-")}-${process.pid}.log`);
  const stream = createWriteStream(path, { flags: "a", mode: 0o600 });
  stream.on("error", (e) => process.stderr.write(`tollgate dev: cannot write ${path}: ${e.message}\n`));
  return {
    path,
    write: (line: string) => void stream.write(line + "\n"),
    close: () => new Promise<void>((r) => stream.end(r)),
  };
}

/**
 * `tollgate dev` and `tollgate emulator` run the local emulator, its own package (@tollgate/emulator), which a
 * production install (`npm ci --omit=dev --workspaces=false`, the image) leaves out: say so rather than print a stack.
 */
async function needsEmulator<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if ((err as { code?: string }).code === "ERR_MODULE_NOT_FOUND" && String(err).includes("@tollgate/emulator"))
      fail(
        "tollgate: this command runs the local emulator (the @tollgate/emulator package), which this install leaves out; from a checkout, run `npm ci && npm run build`.",
      );
    throw err;
  }
}

async function cmdDev(args: string[]) {
  const { values } = parseArgs({
    args,
    options: { json: { type: "boolean" }, port: { type: "string" }, host: { type: "string" }, worker: { type: "boolean" } },
  });
  const json = !!values.json;
  if (values.worker) return cmdDevWorker(json, values.port !== undefined ? Number(values.port) : undefined, values.host);
  const { startDevStack } = await needsEmulator(() => import("./dev-stack.js"));
  const started = Date.now();
  const logs = json ? devLogFile() : undefined;
  const writeLog = logs?.write ?? ((line: string) => void process.stderr.write(line + "\n"));
  const stack = await startDevStack({
    host: values.host,
    port: values.port !== undefined ? Number(values.port) : json ? 0 : 8787,
    logLevel: "info",
    logSink: writeLog,
    ...(logs
      ? {
          emulator: {
            log: (event, fields) => writeLog(JSON.stringify({ ts: new Date().toISOString(), source: "emulator", event, ...fields })),
          },
        }
      : {}),
    progress: json ? undefined : (m) => process.stderr.write(m + "\n"),
  });
  onShutdown(async () => {
    await stack.close();
    await logs?.close();
  }, json);
  const logFile = logs?.path;
  const g = stack.gateway.url;
  if (json) {
    process.stdout.write(
      JSON.stringify({
        gateway: g,
        upstream: stack.emulator.controlUrl,
        runtime: stack.emulator.runtimeUrl,
        chain: stack.emulator.chain?.rpcUrl ?? null,
        tenants: stack.tenants,
        buyers: stack.buyers,
        logFile,
      }) + "\n",
    );
    return;
  }
  const { devBanner, keysOnDemand } = await import("./banner.js");
  process.stdout.write(
    devBanner({
      gateway: g,
      upstream: stack.emulator.controlUrl,
      chain: stack.emulator.chain?.rpcUrl ?? null,
      payer: stack.payer,
      tenants: stack.tenants,
      buyer: stack.buyers.demo && stack.config.sales ? { key: stack.buyers.demo, ...stack.config.sales.accept[0]! } : undefined,
      readySeconds: (Date.now() - started) / 1000,
      pid: process.pid,
    }),
  );
  keysOnDemand(stack.tenants);
}

async function cmdDevWorker(json: boolean, port: number | undefined, host: string | undefined) {
  const { startWorkerDev } = await needsEmulator(() => import("./dev-worker.js"));
  const logs = json ? devLogFile() : undefined;
  const dev = await startWorkerDev({ host, port, log: logs?.write, progress: json ? undefined : (m) => process.stderr.write(m + "\n") });
  onShutdown(async () => {
    await dev.close();
    await logs?.close();
  }, json);
  const info = {
    gateway: dev.gateway,
    upstream: dev.emulator.controlUrl,
    runtime: dev.emulator.runtimeUrl,
    chain: dev.emulator.chain?.rpcUrl ?? null,
    tenants: dev.tenants,
    logFile: logs?.path,
  };
  if (json) return void process.stdout.write(JSON.stringify(info) + "\n");
  const { devBanner, keysOnDemand } = await import("./banner.js");
  const tenants = { ...dev.tenants } as Record<string, string>;
  process.stdout.write(
    devBanner({ gateway: dev.gateway, upstream: info.upstream, chain: info.chain, tenants, worker: true, pid: process.pid }),
  );
  keysOnDemand(tenants);
}

async function cmdStart(args: string[]) {
  const { values } = parseArgs({ args, options: { config: { type: "string" }, port: { type: "string" } } });
  if (!values.config) fail("tollgate start: --config FILE is required (see config/tollgate.example.toml)");
  const { secretFileRefs, secretsFromEnv } = await configLoader();
  const { accountApiKeys, accountWalletKeys, oidcClientSecret, readConfigFile } = await configFiles();
  const { raw, config } = await readConfigFile(values.config);
  const { stateRefusal, startSummary } = await import("./start-checks.js");
  const refusal = stateRefusal(raw, config, values.config);
  if (refusal) fail(refusal);
  const { readSecretFiles } = await import("../host/node/reload.js");
  // Secrets from files ([secrets] *File, TOLLGATE_*_FILE: docs/secrets.md) beside those in the environment.
  const fromFiles = await readSecretFiles(secretFileRefs(config, process.env));
  const secrets = {
    ...secretsFromEnv(process.env),
    ...fromFiles,
    oidcClientSecret: await oidcClientSecret(config, process.env),
    accountApiKeys: await accountApiKeys(config, process.env),
    accountWalletKeys: await accountWalletKeys(config, process.env),
  };
  if (!secrets.upstreamApiKey && !secrets.accountApiKeys)
    fail(
      "tollgate start: set TOLLGATE_UPSTREAM_API_KEY (or secrets.upstreamApiKeyFile, TOLLGATE_UPSTREAM_API_KEY_FILE) to the upstream API key, or configure [[upstream.accounts]].",
    );
  if (!secrets.tokenSecret && !secrets.tokenSecrets)
    fail(
      "tollgate start: set TOLLGATE_TOKEN_SECRET (32+ characters), TOLLGATE_TOKEN_SECRETS (kid:secret,…) or secrets.tokenSecretFile to sign the gateway's tokens.",
    );
  if (!config.server.publicOrigin && !config.server.publicHosts) {
    // Never build handed-out URLs from whatever Host a stranger sends: without configuration, answer loopback names only.
    const { LOOPBACK_HOSTS } = await import("../web/public-origin.js");
    config.server.publicHosts = [...LOOPBACK_HOSTS];
    say(`tollgate start: neither server.publicOrigin nor server.publicHosts is set; answering only to ${LOOPBACK_HOSTS.join(", ")}`);
  }
  const { startNodeGateway } = await import("../host/node.js");
  const port = values.port !== undefined ? Number(values.port) : config.server.port;
  const running = await startNodeGateway({
    config,
    secrets,
    port,
    configFile: values.config, // read again on SIGHUP or when it changes (docs/config-as-code.md)
  }).catch((err: NodeJS.ErrnoException) => {
    if (err?.code === "EADDRINUSE")
      fail(
        `tollgate start: ${config.server.host}:${port} is already in use (another gateway?); pick another port with --port N or server.port in ${values.config}`,
      );
    throw err;
  });
  // The image's HEALTHCHECK (bin/healthcheck.js) probes the port this process listens on, read from this file.
  const portFile = process.env.TOLLGATE_PORT_FILE;
  if (portFile) {
    const { writeFileSync } = await import("node:fs");
    writeFileSync(portFile, `${running.url}\n`);
  }
  say(`tollgate listening on ${running.url}, fronting ${config.upstream.baseUrl}`);
  const wallets = running.gateway.services.wallets;
  say(
    startSummary({
      url: running.url,
      config,
      configFile: values.config,
      wallet: wallets?.gateway?.address,
      accountWallets: wallets?.addresses(),
      secretFiles: secretFileRefs(config, process.env).map((r) => r.path),
    }).join("\n"),
  );
  const drainSeconds = config.server.drainSeconds;
  onShutdown(
    async () => {
      say(`draining: refusing new connections, letting in-flight requests finish (up to ${drainSeconds} s); a second signal exits at once`);
      const r = await running.drain(drainSeconds);
      if (portFile) await import("node:fs").then((fs) => fs.rmSync(portFile, { force: true }));
      say(
        `drained: ${r.inFlight - r.cut} of ${r.inFlight} in-flight requests finished, ${r.cut} cut, ${r.webSockets} WebSockets closed (1001)`,
      );
    },
    false,
    drainSeconds * 1000 + 10_000,
  );
}

async function cmdEmulator(args: string[]) {
  const { values } = parseArgs({
    args,
    options: {
      json: { type: "boolean" },
      "control-port": { type: "string" },
      "runtime-port": { type: "string" },
      "no-chain": { type: "boolean" },
      host: { type: "string" },
      credits: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help)
    return void process.stdout.write(
      "tollgate emulator [--json] [--control-port N] [--runtime-port N] [--no-chain] [--host H] [--credits JSON]\n" +
        "  the local upstream alone (control + runtime listeners, a local chain and a funded wallet); emulator/README.md\n",
    );
  const { startEmulator, parseCreditSchedule } = await needsEmulator(() => import("@tollgate/emulator"));
  let credits: ReturnType<typeof parseCreditSchedule> | undefined;
  try {
    credits = values.credits === undefined ? undefined : parseCreditSchedule(values.credits);
  } catch (err) {
    fail((err as Error).message, 2);
  }
  const emu = await startEmulator({
    host: values.host,
    controlPort: values["control-port"] ? Number(values["control-port"]) : 0,
    runtimePort: values["runtime-port"] ? Number(values["runtime-port"]) : 0,
    chain: !values["no-chain"],
    modules: values["no-chain"] ? ["sandboxes", "sessions"] : undefined,
    credits,
    log: values.json ? undefined : (event, fields) => process.stderr.write(JSON.stringify({ event, ...fields }) + "\n"),
  });
  onShutdown(() => emu.close(), !!values.json);
  // A payer for `tollgate start` against this emulator: made now, funded with 100 tokens on the local chain only.
  const chain = emu.chain;
  const wallet = chain ? await chain.createFundedWallet(EMULATOR_WALLET_FUNDS) : null;
  const token = chain
    ? { address: chain.token.address, network: chain.network, symbol: chain.token.symbol, decimals: chain.token.decimals }
    : null;
  // The runtime URLs the emulator's sandboxes hand out name `localhost` (exposed ports live at <port>-<id>.localhost),
  // not the loopback address it listens on: that host is what a gateway's upstream.allowedHosts must name.
  const runtime = new URL(emu.runtimeUrl);
  const allowedHost = `${["127.0.0.1", "[::1]"].includes(runtime.hostname) ? "localhost" : runtime.hostname}:${runtime.port}`;
  const info = {
    upstream: emu.controlUrl,
    runtime: emu.runtimeUrl,
    allowedHost,
    apiKey: emu.apiKey,
    chain: chain?.rpcUrl ?? null,
    wallet,
    token,
  };
  if (values.json) process.stdout.write(JSON.stringify(info) + "\n");
  else {
    process.stdout.write(
      `emulator ready\n  control  ${info.upstream}\n  runtime  ${info.runtime} (hands out http://${allowedHost}: upstream.allowedHosts = ["${allowedHost}"])\n  apiKey   ${info.apiKey}\n  chain    ${info.chain ?? "-"}\n`,
    );
    if (wallet && token) {
      process.stdout.write(
        `  token    ${token.address} (${token.symbol}, ${token.network})\n  wallet   ${wallet.address} (100 ${token.symbol}; local chain only)\n  walletKey ${wallet.privateKey}\n`,
      );
    }
  }
}

export async function main(argv: string[]) {
  const [cmd, sub, ...rest] = argv;
  try {
    if (cmd === "dev") return await cmdDev(argv.slice(1));
    if (cmd === "start") return await cmdStart(argv.slice(1));
    if (cmd === "emulator") return await cmdEmulator(argv.slice(1));
    if (cmd === "config" && sub === "check") return await (await configFileCli()).cmdConfigCheck(rest);
    if (cmd === "config" && sub === "render") return await (await configFileCli()).cmdConfigRender(rest);
    if (cmd === "routes") return void process.stdout.write((await import("../routing/describe.js")).routeTableMarkdown());
    const remote = rest.some((a) => a === "--gateway" || a.startsWith("--gateway=")) || !!process.env.TOLLGATE_GATEWAY;
    if (cmd === "keys" && sub === "create" && !remote) return await (await configFileCli()).cmdKeysCreate(rest);
    if (cmd === "keys") return await (await adminCli()).cmdKeysRemote(sub, rest);
    if (cmd === "tenants") return await (await adminCli()).cmdTenants(sub, rest);
    if (cmd === "console" && sub === "link") return await (await adminCli()).cmdConsoleLink(rest);
    if (cmd === "secrets") return await (await import("./secrets.js")).cmdSecrets(sub, rest);
    if (cmd === "export") return await (await import("./config-code.js")).cmdExport(argv.slice(1));
    if (cmd === "diff" || cmd === "apply") return await (await import("./config-code.js")).cmdPlan(cmd, argv.slice(1));
    if (cmd === "usage") return await (await creditsCli()).cmdUsage(sub, rest);
    if (cmd === "credits") return await (await creditsCli()).cmdCredits(sub, rest);
    if (cmd === "state") return await (await import("./state.js")).cmdState(sub, rest);
    if (cmd === "signer") return await (await import("./signer.js")).cmdSigner(sub, rest);
    if (cmd === "wallet") return await (await import("./wallet.js")).cmdWallet(sub, rest);
    if (cmd === "--version" || cmd === "-v" || cmd === "version")
      return void process.stdout.write(`tollgate ${(await import("../operators/version.js")).VERSION}\n`);
    if (!cmd || cmd === "help" || cmd === "--help" || cmd === "-h") return void process.stdout.write(USAGE);
    fail(`unknown command: ${argv.join(" ")}\n\n${USAGE}`, 2);
  } catch (err) {
    if (isUserError(err)) fail(err.message);
    fail(`tollgate: ${err instanceof Error ? err.message : String(err)}`);
  }
}

await main(process.argv.slice(2));
