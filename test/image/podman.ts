// What test/image/image.test.ts and compose.test.ts share (`npm run image:test`, docs/deploying.md): whether they run
// at all, the host's podman made ready (the Debian bases and Redis's from deploy/base-image.sh, the settings this host
// needs from deploy/podman-conf.sh — runc where crun fails —, the npm cache the builds install from, from
// deploy/npm-cache.mjs), the flags every build takes (no network, no layer cache, docker format), and the means to
// check that a build left no image behind but the ones it names.
import { execFile, spawn } from "node:child_process";
import { createServer } from "node:net";
import { promisify } from "node:util";

export const run = promisify(execFile);
/** Both tests are skipped unless asked for: they need root, podman, and minutes of CPU. */
export const enabled = process.env.TOLLGATE_IMAGE_TEST === "1";
/** The gateway's image: image.test.ts builds it, compose.test.ts runs it. */
export const IMAGE = process.env.TOLLGATE_IMAGE ?? "localhost/tollgate:test";
/**
 * Every build's flags: no network in its RUN steps (every package comes from the npm cache or the bases, or the build
 * fails), no layer cache (the build stage, the whole dev tree above 1 GB, is not kept as an image), and the docker
 * format (OCI images drop HEALTHCHECK).
 */
export const BUILD_FLAGS = ["--network", "none", "--layers=false", "--format", "docker"];
export const secs = (since: number) => ((Date.now() - since) / 1000).toFixed(1);

/** Runs a command to its end, its output passed through (long builds show progress), failing on a non-zero exit. */
export function step(cmd: string, args: string[], timeoutMs: number, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "inherit", "inherit"], env });
    const t = setTimeout(() => child.kill("SIGTERM"), timeoutMs);
    child.once("exit", (code, signal) => {
      clearTimeout(t);
      code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(" ")}: exit ${code ?? signal}`));
    });
  });
}

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
    s.once("error", reject);
  });

/** The host's podman, ready to build and run: its environment and how it got there. */
export interface PodmanHost {
  /** podman's environment: CONTAINERS_CONF from deploy/podman-conf.sh when this host needs settings of its own. */
  env: NodeJS.ProcessEnv;
  figures: { base: string; runtime: string; containersConf: string };
  /** `podman …` in that environment; its output returned. */
  podman: (argv: string[], opts?: { env?: NodeJS.ProcessEnv }) => Promise<{ stdout: string; stderr: string }>;
}

/**
 * Makes the bases (idempotent: kept when they exist), finds the podman settings this host needs and makes the npm
 * cache. The bases' script is the only step that reaches a network (the Debian mirror, the npm registry for Node);
 * everything after it builds offline.
 */
export async function preparePodman(): Promise<PodmanHost> {
  const t = Date.now();
  await step("./deploy/base-image.sh", [], 20 * 60_000);
  const base = `${secs(t)} s`;
  const conf = (await run("./deploy/podman-conf.sh", [])).stdout.trim();
  const env = conf ? { ...process.env, CONTAINERS_CONF: conf } : process.env;
  const podman = (argv: string[], opts: { env?: NodeJS.ProcessEnv } = {}) => run("podman", argv, { maxBuffer: 32 << 20, env, ...opts });
  const runtime = (await podman(["info", "--format", "{{.Host.OCIRuntime.Name}}"])).stdout.trim();
  await step("node", ["deploy/npm-cache.mjs"], 5 * 60_000, env);
  return { env, podman, figures: { base, runtime, containersConf: conf || "(podman's defaults)" } };
}

/** The image ids podman holds, intermediate ones included. */
export async function imageIds(env: NodeJS.ProcessEnv): Promise<Set<string>> {
  const out = (await run("podman", ["images", "--all", "--no-trunc", "--format", "{{.ID}}"], { env })).stdout;
  return new Set(
    out
      .split("\n")
      .filter(Boolean)
      .map((id) => id.replace(/^sha256:/, "")),
  );
}

/** The id an image name points at now, or undefined. */
export const imageId = (name: string, env: NodeJS.ProcessEnv) =>
  run("podman", ["image", "inspect", "--format", "{{.Id}}", name], { env }).then(
    (r) => r.stdout.trim(),
    () => undefined,
  );

/**
 * Builds by name: what `build` made beyond the images it names is returned (it should be nothing), and the images the
 * names pointed at before, when the build replaced them, are removed by id (a rebuild moves the name to the new image
 * and leaves the old one untagged; `podman rmi` without --force refuses an image still tagged or used).
 */
export async function buildLeavingNothing(names: string[], env: NodeJS.ProcessEnv, build: () => Promise<void>): Promise<string[]> {
  const old = await Promise.all(names.map((name) => imageId(name, env)));
  const before = await imageIds(env);
  await build();
  const named = new Set(await Promise.all(names.map((name) => imageId(name, env))));
  const made = [...(await imageIds(env))].filter((id) => !before.has(id) && !named.has(id));
  for (const [i, name] of names.entries()) {
    const was = old[i];
    if (was && was !== (await imageId(name, env))) await run("podman", ["rmi", was], { env }).catch(() => {});
  }
  return made;
}
