// compose.yaml, end to end (`npm run image:test`, after image.test.ts; skipped by `npm test`): podman-compose builds
// what is missing (the emulator's demo image from the npm cache deploy/npm-cache.mjs makes; Redis from the
// tollgate-redis-base deploy/base-image.sh makes) with no network at all, no layer cache and the podman settings
// deploy/podman-conf.sh finds (runc where crun fails), starts two gateway replicas on Redis behind Sentinel and the
// emulator, and the test reads the demo key from the emulator's log (a line of its own), pays a search through one
// replica, finds it cached through the other, and sees one spend on both. The gateway image is image.test.ts's
// (TOLLGATE_IMAGE), built there with no network; compose builds it too (offline, the same way) when it is missing.
// TOLLGATE_IMAGE_REUSE=1 skips rebuilding the emulator and Redis images when they exist. Set-up: ./podman.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUILD_FLAGS, buildLeavingNothing, enabled, freePort, IMAGE, preparePodman, run, secs, step } from "./podman.js";

// A project of its own (containers, network and volumes are named after it), removed at the end.
const PROJECT = `tgcompose${process.pid}`;
const DEMO = ["localhost/tollgate-emulator:latest", "localhost/tollgate-redis:latest"];

describe.skipIf(!enabled)("compose.yaml (podman-compose): two replicas, one cache, one spend", () => {
  let env: NodeJS.ProcessEnv = process.env;
  const ports = { one: 0, two: 0 };
  let figures: Record<string, string> = {};
  let made: string[] = [];
  // podman-compose's builds take BUILD_FLAGS (no network, no layer cache, docker format) through --podman-build-args.
  const composeArgs = () => ["-p", PROJECT, `--podman-build-args=${BUILD_FLAGS.join(" ")}`];
  const compose = (argv: string[]) => run("podman-compose", [...composeArgs(), ...argv], { env, maxBuffer: 32 << 20 });
  let up = false;

  beforeAll(async () => {
    const host = await preparePodman();
    figures = { ...host.figures };
    ports.one = await freePort();
    ports.two = await freePort();
    env = { ...host.env, TOLLGATE_IMAGE: IMAGE, GATEWAY_1_PORT: String(ports.one), GATEWAY_2_PORT: String(ports.two) };
    const t = Date.now();
    made = await buildLeavingNothing([IMAGE, ...DEMO], env, async () => {
      // The demo's own images, built from this tree every time (the gateway's is built once, by `up`, if missing);
      // TOLLGATE_IMAGE_REUSE=1 keeps them when they exist (a second run while working on the test).
      if (process.env.TOLLGATE_IMAGE_REUSE !== "1") {
        await step("podman-compose", [...composeArgs(), "build", "emulator"], 30 * 60_000, env);
        await step("podman-compose", [...composeArgs(), "build", "redis"], 10 * 60_000, env);
        figures.build = `${secs(t)} s`;
      }
      up = true;
      await step("podman-compose", [...composeArgs(), "up", "-d"], 30 * 60_000, env);
    });
    for (const [name, image] of [
      ["emulatorImage", DEMO[0]!],
      ["redisImage", DEMO[1]!],
    ] as const) {
      const size = Number((await host.podman(["image", "inspect", "--format", "{{.Size}}", image])).stdout);
      figures[name] = `${(size / 1e6).toFixed(0)} MB`;
    }
  }, 60 * 60_000);

  afterAll(async () => {
    if (up) {
      await compose(["down", "-v", "-t", "5"]).catch((e) => console.error(`[compose] down: ${e.stderr ?? e}`));
      // podman-compose 1.0.3 leaves the project's network behind.
      await run("podman", ["network", "rm", `${PROJECT}_default`], { env }).catch(() => {});
    }
    console.log(`[compose] figures: ${JSON.stringify(figures)}`);
  });

  it("builds with no network and no intermediate image left behind", () => {
    expect(made).toEqual([]);
  });

  it("prints the demo key on a line of its own; a search paid through one replica is cached on the other, one spend", async () => {
    // The emulator writes the key when its chain is funded; the gateways start once its secrets are there.
    let key = "";
    let logs = "";
    for (let i = 0; i < 240 && !key; i++) {
      logs = (await run("podman", ["logs", `${PROJECT}_emulator_1`], { env })).stdout;
      key = /^demo key \(tenant acme[^)]*\): (\S+)$/m.exec(logs)?.[1] ?? "";
      if (!key) await new Promise((r) => setTimeout(r, 500));
    }
    expect(key, logs).toMatch(/^\S{20,}$/);
    const one = `http://127.0.0.1:${ports.one}`;
    const two = `http://127.0.0.1:${ports.two}`;
    const t = Date.now();
    for (const gw of [one, two]) {
      let ready: Response | undefined;
      for (let i = 0; i < 240 && ready?.status !== 200; i++) {
        ready = await fetch(`${gw}/_tollgate/ready`).catch(() => undefined);
        if (ready?.status !== 200) await new Promise((r) => setTimeout(r, 500));
      }
      const why = ready?.status === 200 ? "" : (await compose(["logs"]).catch((e) => e)).stdout;
      expect(ready?.status, why).toBe(200);
    }
    figures.ready = `${secs(t)} s after the key`;

    // Each replica runs with the limits compose.yaml sets.
    const limit = await run("podman", ["exec", `${PROJECT}_gateway-1_1`, "sh", "-c", "ulimit -n"], { env });
    expect(limit.stdout.trim()).toBe("16384");

    const search = (gw: string, query: string) =>
      fetch(`${gw}/x402/web/search`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify({ query }),
      });
    const first = await search(one, "electric vehicle charging");
    expect(first.status, await first.clone().text()).toBe(200);
    expect(first.headers.get("x-tollgate-paid")).toBe("0.005");
    const again = await search(two, "electric vehicle charging");
    expect(again.status).toBe(200);
    // The cache is Redis's: the second replica answers from it and pays nothing.
    expect(again.headers.get("x-tollgate-paid")).toMatch(/^0(\.0+)?$/);
    expect(again.headers.get("x-tollgate-cache")).toBe("hit");
    expect(await again.json()).toEqual(await first.json());
    const other = await search(two, "heat pumps");
    expect(other.status).toBe(200);
    expect(other.headers.get("x-tollgate-paid")).toBe("0.005");

    // One budget: both replicas count the same spend (two paid searches). The savings are each replica's own counters
    // (the hit was the second replica's).
    const usage = async (gw: string) => (await fetch(`${gw}/_tollgate/usage`, { headers: { "x-api-key": key } })).json();
    const [{ savings: s1, ...u1 }, { savings: s2, ...u2 }] = [await usage(one), await usage(two)];
    expect(u1).toEqual(u2);
    expect(JSON.stringify(u1)).toContain('"spent":"0.01"');
    expect([s1.hits, s2.hits]).toEqual([0, 1]);
    figures.usage = JSON.stringify(u1);

    // The gateways' logs hold neither the key nor a secret of the demo's secrets file.
    const secrets = (await run("podman", ["exec", `${PROJECT}_emulator_1`, "cat", "/run/demo/secrets.env"], { env })).stdout
      .split("\n")
      .map((l) => l.slice(l.indexOf("=") + 1))
      .filter((v) => v.length >= 16);
    expect(secrets.length).toBe(3);
    for (const name of ["gateway-1", "gateway-2"]) {
      const out = await run("podman", ["logs", `${PROJECT}_${name}_1`], { env });
      for (const secret of [key, ...secrets]) expect(out.stdout + out.stderr).not.toContain(secret);
    }
  }, 300_000);
});
