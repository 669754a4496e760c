// The container image, end to end (`npm run image:test`; skipped by `npm test`, see docs/deploying.md "The image"):
// builds the Debian base (deploy/base-image.sh), finds the podman settings this host needs (deploy/podman-conf.sh: runc
// where crun fails), makes the npm cache the build installs from (deploy/npm-cache.mjs) and builds the Containerfile
// with no network at all and no layer cache (nothing but the image is left behind), runs the image on the host's
// loopback with its config mounted as TOML and its secrets in the environment, waits for /_tollgate/ready, runs the
// HEALTHCHECK, pays a search against the emulator, then stops it with SIGTERM and reads its JSON logs. Needs root,
// podman and buildah (the base script installs them with apt-get) and 6–8 minutes the first time (about 3 for the
// base, 3–4 for the build). test/image/compose.test.ts then runs compose.yaml with this image; the set-up both share is
// test/image/podman.ts.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "smol-toml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { BUILD_FLAGS, buildLeavingNothing, enabled, freePort, IMAGE, type PodmanHost, preparePodman, secs, step } from "./podman.js";

/** The image's size must stay under this (docs/deploying.md states the measured figure). */
const MAX_IMAGE_BYTES = 280e6;
const NAME = `tollgate-image-test-${process.pid}`;

describe.skipIf(!enabled)("the container image (podman)", () => {
  let scratch: string;
  let emu: EmulatorHandle;
  let figures: Record<string, string> = {};
  let host: PodmanHost;
  let made: string[] = [];
  const podman: PodmanHost["podman"] = (argv, opts) => host.podman(argv, opts);
  let env: NodeJS.ProcessEnv = process.env;

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), "tg-image-"));
    host = await preparePodman();
    env = host.env;
    figures = { ...host.figures };
    const t = Date.now();
    made = await buildLeavingNothing([IMAGE], env, () => step("podman", ["build", ...BUILD_FLAGS, "-t", IMAGE, "."], 30 * 60_000, env));
    figures.build = `${secs(t)} s`;
    const size = Number((await podman(["image", "inspect", "--format", "{{.Size}}", IMAGE])).stdout.trim());
    figures.size = `${(size / 1e6).toFixed(0)} MB`;
    figures.sizeBytes = String(size);
    emu = await startEmulator({ modules: ["sessions", "x402"] });
  }, 60 * 60_000);

  afterAll(async () => {
    if (host) await podman(["rm", "--force", "--time", "2", NAME]).catch(() => {});
    await emu?.close();
    if (scratch) await rm(scratch, { recursive: true, force: true });
    console.log(`[image] figures: ${JSON.stringify(figures)}`);
  });

  it("was built offline into one image and nothing else, under the size the docs state", async () => {
    const id = (await podman(["image", "inspect", "--format", "{{.Id}}", IMAGE])).stdout.trim();
    // Exactly one new image: the tagged one (a rebuild of an unchanged tree may reuse it, then nothing is new).
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    expect(made).toEqual([]);
    expect(Number(figures.sizeBytes)).toBeLessThan(MAX_IMAGE_BYTES);
    // The HEALTHCHECK survives (docker format).
    const health = (await podman(["image", "inspect", IMAGE])).stdout;
    expect(health).toContain("bin/healthcheck.js");
  });

  it("starts as a non-root user from a mounted TOML and env secrets, turns healthy, pays a search against the emulator, and drains on SIGTERM", async () => {
    const chain = emu.chain!;
    const wallet = await chain.createFundedWallet(10_000_000n);
    const key = generateTenantKey();
    const port = await freePort();
    const runtimePort = new URL(emu.runtimeUrl).port;
    const config = {
      server: { host: "127.0.0.1", port, logLevel: "info", drainSeconds: 5 },
      upstream: { baseUrl: emu.controlUrl, allowedHosts: [`127.0.0.1:${runtimePort}`, `localhost:${runtimePort}`] },
      payments: { networks: [chain.network], assets: [chain.token.address], maxPerRequest: "0.50", rpc: { [chain.network]: chain.rpcUrl } },
      state: { backend: "memory", rehearsal: true },
      tenants: [{ id: "acme", scopes: ["search"], keys: [{ hash: await hashTenantKey(key) }], budget: { daily: "1.00" } }],
    };
    const file = join(scratch, "tollgate.toml");
    await writeFile(file, stringify(config), { mode: 0o644 });
    // Secrets go by name only (`-e NAME`): their values come from podman's environment, never its command line.
    const secrets = {
      TOLLGATE_UPSTREAM_API_KEY: emu.apiKey,
      TOLLGATE_TOKEN_SECRET: "i".repeat(40),
      TOLLGATE_WALLET_KEY: wallet.privateKey,
    };
    const started = Date.now();
    await podman(
      [
        "run",
        "--detach",
        "--name",
        NAME,
        // The host's network: the container listens on 127.0.0.1 and reaches the emulator there; nothing else is exposed.
        "--network",
        "host",
        "--volume",
        `${file}:/etc/tollgate/tollgate.toml:ro`,
        // No TOLLGATE_HEALTHCHECK_URL: the healthcheck finds the (non-default) port where `start` wrote it.
        ...Object.keys(secrets).flatMap((k) => ["--env", k]),
        IMAGE,
      ],
      { env: { ...env, ...secrets } },
    );
    const gw = `http://127.0.0.1:${port}`;
    let ready: Response | undefined;
    for (let i = 0; i < 240 && ready?.status !== 200; i++) {
      ready = await fetch(`${gw}/_tollgate/ready`).catch(() => undefined);
      if (ready?.status !== 200) await new Promise((r) => setTimeout(r, 250));
    }
    expect(ready?.status, (await podman(["logs", NAME]).catch((e) => e)).stderr).toBe(200);
    figures.ready = `${secs(started)} s from podman run`;

    // The image's HEALTHCHECK (no systemd here to run it on a timer: run it once by hand).
    const health = await podman(["healthcheck", "run", NAME]).then(
      () => "healthy",
      (e) => `unhealthy: ${e.stdout}${e.stderr}`,
    );
    expect(health).toBe("healthy");
    expect((await podman(["exec", NAME, "id", "-u"])).stdout.trim()).toBe("10001");
    // The runtime stage holds the gateway's production dependencies only: no emulator, browser, PTY or chain tooling.
    const installed = (await podman(["exec", NAME, "sh", "-c", "ls /app/node_modules /app/node_modules/@*"])).stdout.split(/\s+/);
    expect(installed).toContain("hono");
    const tools = ["puppeteer-core", "node-pty", "solc", "anvil", "turndown", "minisearch", "tsx", "typescript", "emulator"];
    expect(tools.filter((t) => installed.includes(t))).toEqual([]);

    const r = await fetch(`${gw}/x402/web/search`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ query: "electric vehicle charging" }),
    });
    expect(r.status).toBe(200);
    expect((await r.json()).data.results.length).toBeGreaterThan(0);
    expect(r.headers.get("x-tollgate-paid")).toBe("0.005");

    // SIGTERM (the image's STOPSIGNAL): drains, then exits 0.
    await podman(["stop", "--time", "20", NAME]);
    const state = JSON.parse((await podman(["inspect", "--format", "{{json .State}}", NAME])).stdout);
    expect(state.ExitCode).toBe(0);
    const logs = await podman(["logs", NAME]);
    // Every line on stdout is a JSON object (the image sets TOLLGATE_LOG_FORMAT=json): requests, listening, drained.
    const entries = logs.stdout
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l));
    expect(entries.some((e) => JSON.stringify(e).includes("/x402/web/search"))).toBe(true);
    expect(entries.some((e) => /^drained: \d+ of \d+ in-flight requests finished/.test(e.msg))).toBe(true);
    expect(logs.stderr).toBe("");
    for (const secret of [key, ...Object.values(secrets)]) expect(logs.stdout + logs.stderr).not.toContain(secret);
  }, 180_000);

  it("checks a config with the image's CLI, and says the emulator is not in the image rather than crash", async () => {
    const once = (...cli: string[]) => podman(["run", "--rm", "--network", "none", IMAGE, ...cli]);
    // The example's key hashes are placeholders: the check refuses them, naming each (and nothing else).
    const check = await once("config", "check", "/etc/tollgate/tollgate.example.toml").catch((e) => e);
    expect(check.code).toBe(1);
    expect(check.stderr).toMatch(/tenants\[0\]\.keys\[0\]\.hash: "sha256:0+…" is the example's placeholder/);
    const dev = await once("dev").then(
      () => ({ code: 0, stderr: "" }),
      (e) => e,
    );
    expect(dev.code).toBe(1);
    expect(dev.stderr).toMatch(/\(the @tollgate\/emulator package\), which this install leaves out/);
  }, 60_000);
});
