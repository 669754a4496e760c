import { describe, expect, it } from "vitest";
import { appSetCookie } from "./transport.js";

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
