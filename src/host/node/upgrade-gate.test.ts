// The upgrade gate: non-WebSocket upgrades are answered as plain requests, never left hanging; a WebSocket upgrade
// with a Host that makes no URL is a JSON 400.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "node:net";
import type { RunningGateway } from "../node.js";
import { startBareGateway } from "../../../test/helpers/gateway.js";

/** Writes raw bytes and collects everything until the gateway closes the connection (or 5 s pass). */
function raw(port: number, text: string): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const sock = connect(port, "127.0.0.1");
    let out = "";
    const timer = setTimeout(() => (sock.destroy(), resolve({ text: out, closed: false })), 5000);
    sock.on("data", (d) => (out += d.toString("latin1")));
    sock.on("error", () => {});
    sock.on("close", () => (clearTimeout(timer), resolve({ text: out, closed: true })));
    sock.write(text);
  });
}

describe("gateUpgrades", () => {
  let gw: RunningGateway;
  beforeAll(async () => {
    gw = await startBareGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("answers a plain request whose Host makes no URL with a JSON 400, not node-server's empty one", async () => {
    for (const host of ["a b", "x:99999", "[zz]", "foo:bar"]) {
      const r = await raw(gw.port, `GET /_tollgate/health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      expect(r.text, host).toMatch(/^HTTP\/1\.1 400 /);
      expect(JSON.parse(r.text.slice(r.text.indexOf("\r\n\r\n") + 4)), host).toMatchObject({ code: "invalid_host" });
    }
    const ok = await raw(gw.port, `GET /_tollgate/health HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nConnection: close\r\n\r\n`);
    expect(ok.text).toMatch(/^HTTP\/1\.1 200 /);
  });

  it("serves a bodiless request asking for h2c as the HTTP/1.1 request it also is, then closes", async () => {
    const r = await raw(
      gw.port,
      `GET /_tollgate/health HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n`,
    );
    expect(r.closed).toBe(true);
    expect(r.text).toMatch(/^HTTP\/1\.1 200 /);
  });

  it("refuses an Upgrade to anything but WebSocket that carries a body, with a JSON 400", async () => {
    const r = await raw(
      gw.port,
      `POST /x402/web/search HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nContent-Length: 2\r\n\r\n{}`,
    );
    expect(r.closed).toBe(true);
    expect(r.text).toMatch(/^HTTP\/1\.1 400 /);
    expect(r.text).toContain('"code":"upgrade_not_supported"');
  });

  it("answers a WebSocket upgrade whose Host makes no URL with 400 invalid_host (not node-server's bare 500)", async () => {
    const r = await raw(
      gw.port,
      `GET /devtools/browser/x HTTP/1.1\r\nHost: 127.0.0.1:99999\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
    expect(r.text).toMatch(/^HTTP\/1\.1 400 /);
    expect(r.text).toContain('"code":"invalid_host"');
  });

  it("still relays real WebSocket upgrades to the gateway (a refusal keeps its JSON body)", async () => {
    const r = await raw(
      gw.port,
      `GET /devtools/browser/x HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
    expect(r.text).toMatch(/^HTTP\/1\.1 401 /);
    expect(r.text).toContain('"code"');
  });
});
