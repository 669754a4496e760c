import { describe, expect, it } from "vitest";
import { cidrMatcher, isCidr, wrappedIPv4 } from "./cidr.js";

describe("cidrMatcher", () => {
  it("matches IPv4 ranges and bare addresses", () => {
    const m = cidrMatcher(["10.0.0.0/8", "192.0.2.7"]);
    expect(m("10.200.3.4")).toBe(true);
    expect(m("192.0.2.7")).toBe(true);
    expect(m("192.0.2.8")).toBe(false);
    expect(m("11.0.0.1")).toBe(false);
  });

  it("reads IPv4-mapped IPv6 peers (how Node reports IPv4 clients on ::) as IPv4, both ways", () => {
    expect(cidrMatcher(["10.0.0.0/8"])("::ffff:10.1.2.3")).toBe(true);
    expect(cidrMatcher(["::ffff:10.0.0.0/104"])("10.9.9.9")).toBe(true);
  });

  it("matches IPv6 ranges, compressed or not, with or without brackets and zone", () => {
    const m = cidrMatcher(["fd00::/8", "::1"]);
    expect(m("fd12:3456::1")).toBe(true);
    expect(m("[::1]")).toBe(true);
    expect(m("0:0:0:0:0:0:0:1")).toBe(true);
    expect(m("fe80::1%eth0")).toBe(false);
    expect(m("10.0.0.1")).toBe(false);
  });

  it("trusts nobody with an empty list, and never a missing or malformed address", () => {
    expect(cidrMatcher([])("127.0.0.1")).toBe(false);
    expect(cidrMatcher(["0.0.0.0/0"])(undefined)).toBe(false);
    expect(cidrMatcher(["0.0.0.0/0"])("not-an-ip")).toBe(false);
  });

  it("refuses what is not an address or range", () => {
    for (const bad of ["10.0.0.0/33", "10.0.0.256", "010.0.0.1", "proxy.local", "::1/129", "1:2:3:4:5:6:7:8:9", "10.0.0.0/8/1", ""])
      expect(isCidr(bad), bad).toBe(false);
    expect(() => cidrMatcher(["nope"])).toThrow(/not an address or CIDR range: nope/);
  });

  it("reads the IPv4 address an IPv6 form only wraps: mapped, compatible and translated; nothing else", () => {
    for (const a of ["::7f00:1", "::127.0.0.1", "::ffff:7f00:1", "::ffff:127.0.0.1", "::ffff:0:7f00:1", "[::ffff:0:127.0.0.1]"])
      expect(wrappedIPv4(a), a).toBe("127.0.0.1");
    expect(wrappedIPv4("::a9fe:a9fe")).toBe("169.254.169.254");
    for (const a of ["::", "::1", "fe80::1", "2001:db8::7f00:1", "127.0.0.1", "nope"]) expect(wrappedIPv4(a), a).toBeUndefined();
  });
});
