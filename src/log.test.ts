import { describe, expect, it } from "vitest";
import { Logger, Redactor } from "./log.js";

function logged(fields: Record<string, unknown>, secrets: string[] = []) {
  const lines: string[] = [];
  const logger = new Logger(
    (l) => lines.push(l),
    "info",
    new Redactor().add(...secrets),
    () => 0,
  );
  logger.info("request", fields);
  return lines;
}

describe("Logger: one JSON line per entry, secrets scrubbed", () => {
  it("writes time, level, msg and the fields; bigints as digits", () => {
    const [line] = logged({ path: "/sandbox/x", paid: 1234567890123456789n, nested: { n: 1 } });
    expect(JSON.parse(line!)).toEqual({
      time: "1970-01-01T00:00:00.000Z",
      level: "info",
      msg: "request",
      path: "/sandbox/x",
      paid: "1234567890123456789",
      nested: { n: 1 },
    });
  });

  it("scrubs registered secret values wherever they sit, also when JSON escapes them", () => {
    const plain = "sk_live_upstream_key_123";
    const quoted = 'we"ird\\secret\nvalue';
    const line = logged({ a: `x ${plain} y`, deep: { list: [plain, { q: `<${quoted}>` }] }, [plain]: 1 }, [plain, quoted])[0]!;
    expect(line).not.toContain(plain);
    expect(line).not.toContain(JSON.stringify(quoted).slice(1, -1));
    expect(line).not.toContain('we\\"ird');
    expect(line.match(/\[REDACTED\]/g)?.length).toBeGreaterThanOrEqual(4);
  });

  it("scrubs secret-looking patterns in values, also across a line break JSON escaped", () => {
    const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZW5hbnQifQ.c2lnbmF0dXJlc2ln";
    const key = "tg_abcdefghijklmnopqrstuvwxyz";
    const line = logged({
      userAgent: "x Bearer abcdefghijklmnop",
      error: `Error: boom\n${key} at line\nBearer\nqrstuvwxyz012345\n${jwt}`,
      url: "/x?token=supersecret&ok=1",
      wallet: `0x${"ab".repeat(32)}`,
    })[0]!;
    for (const leaked of ["abcdefghijklmnop", key, "qrstuvwxyz012345", jwt, "supersecret", "ab".repeat(32)])
      expect(line).not.toContain(leaked);
    expect(JSON.parse(line).url).toBe("/x?token=[REDACTED]&ok=1");
  });

  it("scrubs patterns and values in flat fields too (the fast path), and in the message", () => {
    const lines: string[] = [];
    const logger = new Logger(
      (l) => lines.push(l),
      "info",
      new Redactor().add("registered-secret-1"),
      () => 0,
    );
    logger.info("request", { userAgent: "curl Bearer abcdefghijklmnop", path: "/x?ticket=t1234567", n: 1, ok: true, none: null });
    logger.info("token tg_abcdefghijklmnopqrstu seen", { note: "has registered-secret-1 in it" });
    logger.info("empty");
    for (const leaked of ["abcdefghijklmnop", "t1234567", "tg_abcdefghijklmnopqrstu", "registered-secret-1"])
      expect(lines.join("\n")).not.toContain(leaked);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: "info",
      msg: "request",
      n: 1,
      ok: true,
      none: null,
      path: "/x?ticket=[REDACTED]",
    });
    expect(JSON.parse(lines[2]!)).toEqual({ time: "1970-01-01T00:00:00.000Z", level: "info", msg: "empty" });
  });

  it("writes flat fields byte for byte as JSON.stringify would (the fast path)", () => {
    const samples: Array<Record<string, unknown>> = [
      { requestId: "6855738e-233b", method: "GET", path: "/sandbox/sbx_1/processes", status: 200, durationMs: 24.1 },
      { a: 0.1 + 0.2, b: -0, c: Number.NaN, d: Number.POSITIVE_INFINITY, e: 1e21, f: -5e-7, g: 2 ** 53 },
      { t: true, f: false, n: null, u: undefined, s: "", unicode: "é ü 日本", last: 1 },
      { 2: "two", 1: "one", z: "z", "with space": "ok" },
      { token: "", apiKey: 0, authorization: null, password: false },
      { paid: 5000n, saved: 0n, big: 2n ** 70n, neg: -1n },
      { signature: 7n, x: 1n },
    ];
    // A bigint is written as its digits in quotes (the logger's replacer), under any name.
    const asLogged = (_k: string, v: unknown) => (typeof v === "bigint" ? v.toString() : v);
    for (const fields of samples) {
      const [line] = logged(fields);
      // The entry's head first, then the fields in JSON.stringify's own order (integer-like names first).
      const head = '{"time":"1970-01-01T00:00:00.000Z","level":"info","msg":"request",';
      expect(line).toBe(head + JSON.stringify(fields, asLogged).slice(1));
    }
  });

  it("scrubs a registered value holding regular-expression characters, and only that value's exact case", () => {
    const odd = "k.e*y+(1)?[x]|$^/\\-";
    const line = logged({ a: `x${odd}y`, b: "ABCDEFGH", c: "abcdefgh-ok" }, [odd, "abcdefgh"])[0]!;
    expect(line).not.toContain("k.e*y");
    expect(JSON.parse(line)).toMatchObject({ b: "ABCDEFGH", c: "[REDACTED]-ok" });
  });

  it("redacts secret-named fields at any depth, whatever their value", () => {
    const entry = JSON.parse(logged({ authorization: "Basic Zm9v", inner: { apiKey: "k", privateKey: { x: 1 } }, token: "" })[0]!);
    expect(entry.authorization).toBe("[REDACTED]");
    expect(entry.inner).toEqual({ apiKey: "[REDACTED]", privateKey: "[REDACTED]" });
    expect(entry.token).toBe(""); // nothing to hide
  });

  it("keeps the line when a field cannot be serialised", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const entry = JSON.parse(logged({ cyclic })[0]!);
    expect(entry).toMatchObject({ msg: "request", logError: "fields not serialisable" });
  });

  it("writes nothing below its level", () => {
    const lines: string[] = [];
    new Logger((l) => lines.push(l), "error", new Redactor()).info("request", {});
    expect(lines).toEqual([]);
  });
});

describe("Logger: the line's time stamp", () => {
  it("is toISOString() of the clock, across milliseconds, seconds, days and odd clocks", () => {
    let now = 0;
    const lines: string[] = [];
    const logger = new Logger(
      (l) => lines.push(l),
      "info",
      new Redactor(),
      () => now,
    );
    const times = [
      Date.UTC(2026, 11, 6, 23, 59, 59, 998),
      Date.UTC(2026, 11, 6, 23, 59, 59, 999),
      Date.UTC(2026, 11, 7, 0, 0, 0, 0),
      Date.UTC(2026, 11, 7, 0, 0, 0, 5),
      Date.UTC(2026, 11, 7, 0, 0, 0, 50),
      Date.UTC(2026, 11, 7, 0, 0, 0, 500),
      Date.UTC(2026, 11, 7, 0, 0, 1, 7),
      Date.UTC(2026, 11, 7, 0, 0, 0, 999), // a clock that went back
      Date.UTC(2026, 11, 7, 0, 0, 1, 7) + 0.6, // fractional milliseconds
      Date.UTC(2026, 11, 7, 0, 0, 1, 8),
      -1, // before 1970
      -1000,
      0,
      Date.UTC(10_000, 0, 1, 0, 0, 0, 42), // a six-digit year
      Date.UTC(10_000, 0, 1, 0, 0, 0, 43),
    ];
    for (const t of times) {
      now = t;
      logger.info("tick");
      logger.info("tock"); // the same millisecond again
    }
    const stamps = lines.map((l) => (JSON.parse(l) as { time: string }).time);
    expect(stamps).toEqual(times.flatMap((t) => [new Date(t).toISOString(), new Date(t).toISOString()]));
  });
});
