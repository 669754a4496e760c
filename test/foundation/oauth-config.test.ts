// The [oauth] config section: defaults that run an authorization server, and errors that name the exact field.
import { describe, expect, it } from "vitest";
import { ConfigError, parseConfigText } from "../../config/load.js";

function problemsOf(text: string): string[] {
  try {
    parseConfigText(text, "t.toml");
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error("expected a ConfigError");
}

describe("oauth config", () => {
  it("defaults: on, metadata documents over https only, registration bounded", () => {
    const c = parseConfigText("", "t.toml");
    expect(c.oauth).toMatchObject({
      enabled: true,
      codeTtlSeconds: 60,
      maxGrantDays: 90,
      defaultGrantDays: 30,
      clientMetadataDocuments: { enabled: true, allowHttpLoopback: false, maxBytes: 16_384, timeoutMs: 3_000 },
      registration: { enabled: true, ttlDays: 30, maxPerDay: 1_000, perAddressPerHour: 20 },
    });
    expect(c.oauth.accessTokenTtlSeconds).toBeUndefined();
  });

  it("names each wrong field", () => {
    const p = problemsOf(
      `[oauth]\ncodeTtlSeconds = 1\nnope = 1\n[oauth.registration]\nmaxPerDay = 0\n[oauth.clientMetadataDocuments]\nmaxBytes = "big"\n`,
    );
    expect(p.some((l) => l.startsWith("oauth.codeTtlSeconds:"))).toBe(true);
    expect(p.some((l) => l.startsWith("oauth.nope:"))).toBe(true);
    expect(p.some((l) => l.startsWith("oauth.registration.maxPerDay:"))).toBe(true);
    expect(p.some((l) => l.startsWith("oauth.clientMetadataDocuments.maxBytes:"))).toBe(true);
    expect(problemsOf("[oauth]\ndefaultGrantDays = 100\n")).toEqual(["oauth.defaultGrantDays: must be at most maxGrantDays (90)"]);
  });
});
