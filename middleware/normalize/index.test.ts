import { describe, expect, it } from "vitest";
import { splitRequestUrl } from "../../src/web/request-url.js";
import { normalisePath } from "./index.js";

const ok = (raw: string) => {
  const n = normalisePath(raw);
  if (!n.ok) throw new Error(`refused ${raw}: ${n.reason}`);
  return n.path;
};
const refused = (raw: string) => {
  const n = normalisePath(raw);
  return n.ok ? undefined : n.reason;
};

describe("normalisePath", () => {
  it("leaves a canonical path alone and says so", () => {
    expect(normalisePath("/sandbox/abc/files/presign-download")).toEqual({
      ok: true,
      path: "/sandbox/abc/files/presign-download",
      changed: false,
    });
  });

  it("leaves names that only start like dot segments alone", () => {
    for (const p of ["/a/.hidden", "/a/..x", "/v1.2/x", "/a/b.c"]) expect(normalisePath(p)).toEqual({ ok: true, path: p, changed: false });
  });

  it("decodes escapes of unreserved characters, in either case", () => {
    expect(ok("/sandbox/abc/files/presign%2Ddownload")).toBe("/sandbox/abc/files/presign-download");
    expect(ok("/sandbox/abc/files/%70resign-download")).toBe("/sandbox/abc/files/presign-download");
    expect(ok("/sandbox/abc/files/presign%2dupload")).toBe("/sandbox/abc/files/presign-upload");
    expect(ok("/api/%73andbox/%7Ex")).toBe("/api/sandbox/~x");
  });

  it("keeps escapes of reserved characters encoded (upper-cased), so they stay data", () => {
    expect(ok("/api/snapshots/a%3ab%20c")).toBe("/api/snapshots/a%3Ab%20c");
    expect(ok("/api/snapshots/%252F")).toBe("/api/snapshots/%252F");
  });

  it("resolves dot segments, encoded ones too, and merges repeated slashes", () => {
    expect(ok("/sandbox/abc/files/x/../presign-download")).toBe("/sandbox/abc/files/presign-download");
    expect(ok("/sandbox/abc/./files//presign-upload")).toBe("/sandbox/abc/files/presign-upload");
    expect(ok("/sandbox/abc/files/x/%2e%2E/presign-download")).toBe("/sandbox/abc/files/presign-download");
    expect(ok("//api///sandboxes/")).toBe("/api/sandboxes");
    expect(ok("/")).toBe("/");
  });

  it.each([
    ["an encoded slash", "/sandbox/abc%2Fdef/exec"],
    ["an encoded slash in lower case", "/api/session/a%2fb"],
    ["an encoded backslash", "/api/session/a%5Cb"],
    ["a raw backslash", "/api/session/a\\b"],
    ["an encoded NUL", "/api/session/a%00"],
    ["an encoded control character", "/api/session/a%0A"],
    ["a raw control character", "/api/session/a\tb"],
    ["an invalid escape", "/sandbox/%ZZ/exec"],
    ["a truncated escape", "/sandbox/abc/exec%2"],
    ["a climb above the root", "/../api/sandboxes"],
    ["an encoded climb above the root", "/%2e%2e/api/sandboxes"],
  ])("refuses %s", (_what, raw) => {
    expect(refused(raw)).toBeTypeOf("string");
  });
});

describe("splitRequestUrl", () => {
  it("splits without a URL parser, whatever the host", () => {
    expect(splitRequestUrl("http://foo.123/api/x?y=1")).toEqual({ origin: "http://foo.123", path: "/api/x", query: "?y=1" });
    expect(splitRequestUrl("http://h:1?q")).toEqual({ origin: "http://h:1", path: "/", query: "?q" });
    expect(splitRequestUrl("http://h")).toEqual({ origin: "http://h", path: "/", query: "" });
  });
});
