import { describe, expect, it } from "vitest";
import { canonicalCidr, canonicalEgressRule } from "./egress-rules.js";

describe("egress rules: one canonical spelling, or refused", () => {
  it.each([
    ["203.0.113.0/024", "203.0.113.0/24"],
    ["203.0.113.7/24", "203.0.113.0/24"],
    ["10.0.0.0/8", "10.0.0.0/8"],
    ["0.0.0.0/0", "0.0.0.0/0"],
    ["192.0.2.7", "192.0.2.7"],
    [" 192.0.2.7/32 ", "192.0.2.7/32"],
    ["2001:DB8:0:0:0:0:0:0/32", "2001:db8::/32"],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
    ["[::1]", "::1"],
    ["fe80:0:0:0:0:0:0:1/010", "fe80::/10"],
    ["::ffff:10.0.0.0/104", "10.0.0.0/8"],
    ["Example.COM.", "example.com"],
    ["*.Example.com", "*.example.com"],
    ["bücher.example", "xn--bcher-kva.example"],
    ["*", "*"],
  ])("%s → %s", (rule, canonical) => {
    expect(canonicalEgressRule(rule)).toBe(canonical);
  });

  it.each([
    "0.0.0.0/0.allowed.example",
    "203.0.113.0/33",
    "203.0.113.0/",
    "203.0.113.0/24/8",
    "203.0.113.0/x",
    "010.0.0.1",
    "1.2.3",
    "0x7f.1",
    "256.0.0.1",
    "fe80::1%eth0",
    "fe80::zz",
    "example.com:443",
    "http://example.com",
    "example.com/path",
    "user@example.com",
    "exa mple.com",
    "-bad.example",
    "bad-.example",
    "a..example",
    "*example.com",
    "*.*.example.com",
    "",
    " ",
    "example.123",
  ])("refuses %j", (rule) => {
    expect(canonicalEgressRule(rule)).toBeUndefined();
  });

  it("writes IPv6 in RFC 5952's form: the longest zero run compressed, the first of equals, never a single group", () => {
    expect(canonicalCidr("1:0:0:1:0:0:0:1")).toBe("1:0:0:1::1");
    expect(canonicalCidr("1:0:0:1:0:0:1:1")).toBe("1::1:0:0:1:1");
    expect(canonicalCidr("1:0:1:1:1:1:1:1")).toBe("1:0:1:1:1:1:1:1");
    expect(canonicalCidr("0:0:0:0:0:0:0:0/0")).toBe("::/0");
  });
});
