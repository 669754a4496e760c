// The image's HEALTHCHECK script (bin/healthcheck.js), run as the image runs it, against `tollgate start` on a port that
// is not the default: it probes the port the gateway wrote to TOLLGATE_PORT_FILE (healthy while it serves, unhealthy
// once it stopped), never 127.0.0.1:8787 whatever runs there. (The image test, test/image/, runs it inside podman.)
import { execFile } from "node:child_process";
import { createServer, type Server } from "node:http";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startGatewayProcess } from "../helpers/gateway-process.js";

const run = promisify(execFile);

describe("bin/healthcheck.js", () => {
  let upstream: Server;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "tg-healthcheck-"));
    // Any HTTP answer makes an upstream reachable for readiness.
    upstream = createServer((_req, res) => res.writeHead(200, { "content-type": "application/json" }).end("{}"));
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  });
  afterAll(async () => {
    await new Promise((r) => upstream.close(r));
    await rm(dir, { recursive: true, force: true });
  });

  const check = (env: Record<string, string>) =>
    run(process.execPath, ["bin/healthcheck.js"], { env: { PATH: process.env.PATH ?? "", ...env } }).then(
      (r) => ({ code: 0, out: r.stdout }),
      (e) => ({ code: e.code as number, out: String(e.stdout) }),
    );

  it("probes the port `start` listens on, and fails once it stopped", async () => {
    const portFile = join(dir, "tollgate.listening");
    const port = (upstream.address() as { port: number }).port;
    const gw = await startGatewayProcess(
      {
        server: { host: "127.0.0.1", port: 0, logLevel: "error" },
        upstream: { baseUrl: `http://127.0.0.1:${port}` },
        payments: { enabled: false },
        tenants: [{ id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(generateTenantKey()) }] }],
      },
      { TOLLGATE_UPSTREAM_API_KEY: "k", TOLLGATE_TOKEN_SECRET: "h".repeat(40), TOLLGATE_PORT_FILE: portFile },
    );
    try {
      expect((await readFile(portFile, "utf8")).trim()).toBe(gw.url);
      expect(new URL(gw.url).port).not.toBe("8787");
      const healthy = await check({ TOLLGATE_PORT_FILE: portFile });
      expect(healthy, gw.output()).toMatchObject({ code: 0 });
      expect(healthy.out).toMatch(/^200 \{"status":"ready"/);
    } finally {
      await gw.stop();
    }
    const down = await check({ TOLLGATE_PORT_FILE: portFile });
    expect(down.code).toBe(1);
    expect(down.out).toMatch(/^(not listening|unreachable)/);
  }, 60_000);
});
