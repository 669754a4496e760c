import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { appSetCookie, fetchTransport, REQUEST_DROPPED, UnsentHost } from "./transport.js";
import { fetchWebSocketRelay } from "./websocket.js";

describe("appSetCookie: what an exposed port's app may set", () => {
  it("passes the app's own cookies on, host-only", () => {
    expect(appSetCookie("sid=abc; Path=/; HttpOnly")).toBe("sid=abc; Path=/; HttpOnly");
    expect(appSetCookie("sid=abc; Domain=gateway.example; Path=/")).toBe("sid=abc; Path=/");
    expect(appSetCookie("sid=abc; domain=.example; Secure")).toBe("sid=abc; Secure");
  });

  it.each(["tollgate_port=x; Path=/", "TOLLGATE_CONSOLE=x", "__Host-tollgate_console=x; Secure; Path=/", "__Secure-tollgate_port=y"])(
    "never passes on one of the gateway's own cookies: %s",
    (header) => {
      expect(appSetCookie(header)).toBeUndefined();
    },
  );
});

describe("a transport that cannot set Host never sends a request elsewhere than it names", () => {
  it("fetch refuses a Host other than the URL's own, and nothing reaches the URL's host", async () => {
    let arrived = 0;
    const server = createServer((_q, r) => {
      arrived++;
      r.end("runtime api");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const exec = fetchTransport.request({
        url: `${origin}/sandbox/sbx_1/exec`,
        method: "POST",
        headers: new Headers({ host: "3000-sbx_1.localhost", authorization: "Bearer runtime-token" }),
        body: '{"command":"id"}',
      });
      await expect(exec).rejects.toBeInstanceOf(UnsentHost);
      const ws = fetchWebSocketRelay({} as never, { url: `${origin.replace("http", "ws")}/`, headers: { host: "3000-sbx_1.localhost" } });
      await expect(ws).rejects.toBeInstanceOf(UnsentHost);
      // Its own host (any case) is no reason to refuse.
      const own = await fetchTransport.request({ url: `${origin}/`, method: "GET", headers: new Headers({ host: new URL(origin).host }) });
      expect(await own.text()).toBe("runtime api");
      expect(arrived).toBe(1);
    } finally {
      server.close();
    }
  });

  it("a client's own x-tollgate-port-host is never forwarded (only the port relay names a port that way)", () => {
    expect(REQUEST_DROPPED.has("x-tollgate-port-host")).toBe(true);
  });
});
