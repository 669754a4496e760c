// The fuzzer's requests, generated from a seed: route-table paths with hostile parameters and spellings, every method,
// odd credentials, Hosts, encodings and bodies; and raw-socket framing attacks (duplicate Content-Length,
// Transfer-Encoding tricks, broken chunking, odd request lines) that only a hand-written byte stream can send.
import { gzipSync } from "node:zlib";
import { ROUTES } from "../../src/routing/table.js";
import type { Prng } from "./prng.js";

export interface FuzzTarget {
  /** `127.0.0.1:<port>` of the gateway. */
  host: string;
  keys: { acme: string; rival: string; ops: string };
  tokens: { sandbox?: string; search: string; session?: string };
  sandboxId?: string;
  sessionId?: string;
}

export interface HttpCase {
  kind: "http";
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

export interface RawCase {
  kind: "raw";
  name: string;
  payload: Buffer;
  /** Framing a server must refuse: the smuggled request (marked in its query) must never reach the upstream. */
  ambiguous: boolean;
  marker?: string;
  /**
   * A request the gateway must answer with a status line: well-formed, or one HTTP requires a 400 for. Sent without
   * closing our side first (a client that half-closes is one that went away). The others (framing attacks, malformed
   * or cut-off requests) may also be refused by closing the connection, and need our side closed to end.
   */
  mustAnswer: boolean;
}

export type FuzzCase = HttpCase | RawCase;

const METHODS = ["GET", "GET", "POST", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "PROPFIND", "TRACE", "M-SEARCH"];
const OWN = [
  "/_tollgate/health",
  "/_tollgate/whoami",
  "/_tollgate/ready",
  "/_tollgate/metrics",
  "/_tollgate/usage",
  "/_tollgate/ledger",
  "/_tollgate/tokens",
  "/_tollgate/tokens/revoke",
  "/_tollgate/tokens/:jti",
  "/_tollgate/openapi.json",
  "/_tollgate/admin/usage",
  "/_tollgate/admin/ledger",
  "/_tollgate/admin/audit",
  "/_tollgate/admin/tenants",
  "/_tollgate/admin/tenants/:id",
  "/_tollgate/admin/tenants/:id/keys",
  "/_tollgate/admin/tenants/:id/budget",
  "/_tollgate/admin/tenants/:id/keys/:keyId/rotate",
  "/_tollgate/session-files/:id",
  "/_tollgate/computer-action/:id",
];
/** Rows whose known ids would end the run's own resources: they only ever get strangers' ids. */
const DESTRUCTIVE = /\.(stop|delete|kill|signal)$|^runtime\.pty\.create$|^runtime\.processes\.start$|^session\.update$/;
const VOCAB = [
  "query",
  "url",
  "urls",
  "command",
  "cmd",
  "args",
  "path",
  "content",
  "encoding",
  "kind",
  "cap",
  "scopes",
  "sandboxId",
  "sessionId",
  "timeoutMinutes",
  "durationMinutes",
  "imageName",
  "snapshotName",
  "maxPages",
  "maxSteps",
  "ttlSeconds",
  "region",
  "action",
  "x",
  "y",
  "text",
  "cols",
  "rows",
  "signal",
  "token",
  "name",
  "enabled",
  "budget",
  "daily",
  "page",
  "limit",
  "maxResults",
  "__proto__",
  "constructor",
  "port",
];
const COMMANDS = ["echo fuzz", "true", "ls /", "cat /etc/hostname", "printf x", "node -e 1"];

function idLike(r: Prng, t: FuzzTarget, destructive: boolean): string {
  const known = destructive ? [] : [t.sandboxId, t.sessionId].filter((x): x is string => !!x);
  const options = [
    ...known,
    ...known,
    `${r.string(8, "0123456789abcdef")}-${r.string(4, "0123456789abcdef")}`,
    r.string(r.int(1, 40)),
    "0",
    "-1",
    "..",
    "%2e%2e",
    "%2F",
    "%00",
    "null",
    "undefined",
    "%E2%80%AE",
    "é",
    "a".repeat(r.int(200, 5000)),
    "__proto__",
    "%25",
    "%",
    "~",
    "*",
  ];
  return r.pick(options);
}

function fillPath(r: Prng, t: FuzzTarget, pattern: string, destructive: boolean): string {
  return pattern.replace(/:([A-Za-z]+)(\{[^}]*\})?/g, () => idLike(r, t, destructive));
}

/** Spellings the path normaliser must either read one way or refuse. */
function mutatePath(r: Prng, p: string): string {
  switch (r.int(0, 14)) {
    case 0:
      return p + "/";
    case 1:
      return p.replace(/\//g, "//");
    case 2:
      return p.replace(/\/([^/]+)$/, "/./$1");
    case 3:
      return p.replace(/\/([^/]+)$/, "/x/../$1");
    case 4:
      return p.replace(/\//g, "%2F");
    case 5:
      return p.replace(/\/([^/]+)$/, "/%2e%2e/$1");
    case 6:
      return p.toUpperCase();
    case 7:
      return p + ";jsessionid=" + r.string(6);
    case 8:
      return p.replace(/\//g, "\\");
    case 9:
      return p + "%00";
    case 10:
      return p + "/" + r.string(r.int(1000, 9000));
    case 11:
      return p.replace(/[a-z]/, (c) => "%" + c.charCodeAt(0).toString(16));
    case 12:
      return p + "%ff%fe";
    default:
      return p;
  }
}

function query(r: Prng): string {
  if (r.chance(0.7)) return "";
  return r.pick([
    "?page=1&limit=10",
    "?limit=-1",
    "?limit=1e309",
    "?status=active&status=closed",
    "?ticket=" + r.string(30),
    "?token=" + r.string(40),
    "?state=settled&kind=x402",
    "?a=%zz",
    "?" + "x=1&".repeat(r.int(10, 500)),
    "?tenant=acme",
    "?__proto__[x]=1",
    "?path=/etc/passwd",
  ]);
}

function jsonValue(r: Prng, depth: number): unknown {
  if (depth > 12) return r.int(0, 9);
  switch (r.int(0, 11)) {
    case 0:
      return r.string(r.int(0, 40));
    case 1:
      return r.pick(COMMANDS);
    case 2:
      return r.pick([0, -1, 1.5, 1e308, -1e308, Number("9007199254740993"), 2 ** 53, 3600 * 24 * 365]);
    case 3:
      return r.chance(0.5);
    case 4:
      return null;
    case 5:
      return Array.from({ length: r.int(0, 6) }, () => jsonValue(r, depth + 1));
    case 6:
      return plausibleObject(r, depth + 1);
    case 7:
      return r.pick([
        "0.01",
        "0.0000001",
        "-1",
        "1e9",
        "",
        "NaN",
        "Infinity",
        "https://example.com/",
        "ws://127.0.0.1:1/",
        "/tmp/fuzz.txt",
      ]);
    case 8:
      return r.string(r.int(0, 8), '\u0000\u2028\ud800\uffff"\\é漢🙂');
    case 9:
      return ["runtime", "terminal", "ports", "cdp", "computer", "search"].slice(0, r.int(0, 6));
    case 10:
      return r.pick(["sandbox", "session", "search", "x"]);
    default:
      return "x".repeat(r.int(100, 20_000));
  }
}

function plausibleObject(r: Prng, depth = 0): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (let i = r.int(0, 6); i > 0; i--) o[r.pick(VOCAB)] = jsonValue(r, depth);
  return o;
}

function deep(r: Prng, n: number): string {
  return r.chance(0.5) ? "[".repeat(n) + "]".repeat(n) : '{"a":'.repeat(n) + "1" + "}".repeat(n);
}

function body(r: Prng): { body?: Buffer; headers: Record<string, string> } {
  const json = {
    "content-type": r.pick(["application/json", "application/json; charset=utf-8", "text/plain", "application/json; charset=utf-16"]),
  };
  const roll = r.next();
  if (roll < 0.3) return { headers: {} };
  if (roll < 0.62) return { body: Buffer.from(JSON.stringify(plausibleObject(r))), headers: json };
  if (roll < 0.72) return { body: Buffer.from(JSON.stringify(jsonValue(r, 0)) ?? "null"), headers: json };
  if (roll < 0.8) {
    const s = JSON.stringify(plausibleObject(r));
    const broken = r.pick([
      s.slice(0, Math.max(1, s.length >> 1)),
      s + "}",
      "\ufeff" + s,
      s.replace(/"/g, "'"),
      "{,}",
      "NaN",
      '{"a":1,}',
      "",
      "\u0000",
      deep(r, r.int(60, 6000)),
    ]);
    return { body: Buffer.from(broken), headers: json };
  }
  if (roll < 0.88)
    return {
      body: r.bytes(r.int(0, 64 * 1024)),
      headers: { "content-type": r.pick(["application/octet-stream", "application/json", "multipart/form-data; boundary=x"]) },
    };
  if (roll < 0.9) return { body: Buffer.alloc(r.int(1, 3) * 1024 * 1024 + r.int(0, 1000), 0x20), headers: json };
  if (roll < 0.95)
    return {
      body: gzipSync(Buffer.from(JSON.stringify(plausibleObject(r)))),
      headers: { ...json, "content-encoding": r.pick(["gzip", "br", "deflate", "x-unknown"]) },
    };
  return {
    body: Buffer.from(new URLSearchParams({ query: r.string(10) }).toString()),
    headers: { "content-type": "application/x-www-form-urlencoded" },
  };
}

function credentials(r: Prng, t: FuzzTarget): Record<string, string> {
  const bearer = (v: string | undefined): Record<string, string> => (v ? { authorization: `Bearer ${v}` } : {});
  switch (r.int(0, 13)) {
    case 0:
    case 1:
    case 2:
      return { "x-api-key": t.keys.acme };
    case 3:
      return bearer(t.keys.acme);
    case 4:
      return { "x-api-key": t.keys.rival };
    case 5:
      return { "x-api-key": t.keys.ops };
    case 6:
    case 7:
      return bearer(t.tokens.sandbox);
    case 8:
      return bearer(t.tokens.search);
    case 9:
      return bearer(t.tokens.session);
    case 10:
      return { "x-api-key": r.pick(["tg_" + r.string(40), "", "x".repeat(r.int(1000, 8000)), t.keys.acme.slice(0, -1) + "A"]) };
    case 11:
      return {
        authorization: r.pick([
          "Bearer eyJhbGciOiJub25lIn0.eyJ0ZW5hbnQiOiJhY21lIn0.",
          "Bearer ",
          "Basic YTpi",
          "Bearer " + (t.tokens.sandbox ?? "x").slice(0, -2) + "xx",
        ]),
      };
    case 12:
      return { "x-api-key": t.keys.acme, authorization: bearer(t.tokens.search).authorization ?? "" };
    default:
      return {};
  }
}

function hostHeader(r: Prng, t: FuzzTarget): string {
  if (r.chance(0.85)) return t.host;
  const port = t.host.split(":")[1];
  return r.pick([
    `localhost:${port}`,
    "evil.example",
    `[::1]:${port}`,
    `LOCALHOST:${port}`,
    `${t.host}.`,
    "127.0.0.1:99999",
    `3000-${t.sandboxId ?? "x"}.localhost:${port}`,
    `${r.string(r.int(200, 400))}.example`,
    `user@${t.host}`,
    "[::ffff:127.0.0.1]",
    "_",
    `${t.host}:1`,
    `-1-${t.sandboxId ?? "x"}.localhost:${port}`,
  ]);
}

function extraHeaders(r: Prng, t: FuzzTarget): Record<string, string> {
  const h: Record<string, string> = {};
  const all: Array<[string, () => string]> = [
    ["x-forwarded-for", () => r.pick(["1.2.3.4", "::1", "garbage", "1.2.3.4, 5.6.7.8", "999.1.1.1", "x".repeat(2000)])],
    ["x-forwarded-proto", () => r.pick(["https", "gopher", ""])],
    ["x-forwarded-host", () => r.pick(["evil.example", t.host, "a b"])],
    ["forwarded", () => r.pick(["for=1.2.3.4;proto=https", 'for="[::1]"', "for=;;;", "by=x"])],
    ["x-request-id", () => r.pick([r.string(16), "x".repeat(r.int(200, 4000)), "a b c", ""])],
    ["idempotency-key", () => r.pick([r.string(8), "", "k".repeat(1000)])],
    ["payment-signature", () => r.pick([Buffer.from(JSON.stringify({ x402Version: 2 })).toString("base64"), "!!!", r.string(200)])],
    ["x-payment", () => r.string(r.int(1, 300))],
    ["accept-encoding", () => r.pick(["gzip", "br", "*", "identity;q=0", "gzip;q=0.5, br;q=2"])],
    ["origin", () => r.pick(["https://evil.example", "null", `http://${t.host}`])],
    ["range", () => r.pick(["bytes=0-10", "bytes=-1", "bytes=99999999999-"])],
    ["upgrade", () => r.pick(["websocket", "h2c"])],
    ["connection", () => r.pick(["keep-alive", "upgrade", "close"])],
    ["sec-websocket-key", () => Buffer.from(r.string(16)).toString("base64")],
    ["sec-websocket-version", () => r.pick(["13", "8"])],
    ["cookie", () => r.pick([`tg_port=${r.string(40)}`, "a=b; " + "c=d; ".repeat(200)])],
    ["expect", () => r.pick(["100-continue", "bogus"])],
    [`x-${r.string(6)}`, () => r.string(r.int(0, 100))],
  ];
  for (let i = r.int(0, 4); i > 0; i--) {
    const [k, v] = r.pick(all);
    h[k] = v();
  }
  return h;
}

export function httpCase(r: Prng, t: FuzzTarget): HttpCase {
  let path: string;
  let method: string;
  if (r.chance(0.8)) {
    const row = r.pick(ROUTES);
    path = fillPath(r, t, row.path, DESTRUCTIVE.test(row.name));
    const methods = typeof row.method === "string" ? [row.method] : [...row.method];
    method = r.chance(0.75) ? r.pick(methods) : r.pick(METHODS);
  } else {
    path = fillPath(r, t, r.pick(OWN), true);
    method = r.pick(METHODS);
  }
  if (r.chance(0.25)) path = mutatePath(r, path);
  const b = method === "GET" || method === "HEAD" ? (r.chance(0.1) ? body(r) : { headers: {} }) : body(r);
  const headers: Record<string, string> = { host: hostHeader(r, t), ...credentials(r, t), ...b.headers, ...extraHeaders(r, t) };
  // The ops key may change tenants; it never changes the ones the run itself relies on.
  if (headers["x-api-key"] === t.keys.ops && method !== "GET") path = path.replace(/\/tenants\/(acme|ops)\b/, "/tenants/nobody");
  return { kind: "http", method, path: path + query(r), headers, body: b.body };
}

/** Framing attacks, each sent on its own connection. `H` is the Host; `M` a unique marker for a smuggled request. */
const RAW: Array<{ name: string; ambiguous: boolean; text: (h: string, key: string, m: string) => string }> = [
  {
    name: "CL+TE",
    ambiguous: true,
    text: (h, k, m) =>
      `POST /x402/web/search HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /api/sessions?m=${m} HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\n\r\n`,
  },
  {
    name: "TE+CL",
    ambiguous: true,
    text: (h, k, m) =>
      `POST /api/sandbox HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nTransfer-Encoding: chunked\r\nContent-Length: 60\r\n\r\n0\r\n\r\nGET /api/sessions?m=${m} HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\n\r\n`,
  },
  {
    name: "duplicate CL (differing)",
    ambiguous: true,
    text: (h, k, m) =>
      `POST /api/profile HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nContent-Length: 2\r\nContent-Length: 70\r\n\r\n{}GET /api/sessions?m=${m} HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\n\r\n`,
  },
  {
    name: "duplicate CL (same)",
    ambiguous: false,
    text: (h, k) => `POST /api/profile HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}`,
  },
  {
    name: "CL list",
    ambiguous: true,
    text: (h, k, m) =>
      `POST /api/profile HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nContent-Length: 2, 70\r\n\r\n{}GET /api/sessions?m=${m} HTTP/1.1\r\nHost: ${h}\r\n\r\n`,
  },
  {
    name: "TE xchunked",
    ambiguous: true,
    text: (h, k, m) =>
      `POST /api/profile HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nTransfer-Encoding: xchunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\nGET /api/sessions?m=${m} HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\n\r\n`,
  },
  {
    name: "TE space before colon",
    ambiguous: true,
    text: (h, k, m) =>
      `POST /api/profile HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nTransfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\nGET /api/sessions?m=${m} HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\n\r\n`,
  },
  {
    name: "TE chunked, identity",
    ambiguous: true,
    text: (h, k, m) =>
      `POST /api/profile HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\nGET /api/sessions?m=${m} HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\n\r\n`,
  },
  {
    name: "TE tab",
    ambiguous: false,
    text: (h, k) =>
      `POST /api/profile HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nTransfer-Encoding:\tchunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
  },
  {
    name: "TE twice",
    ambiguous: true,
    text: (h, k, m) =>
      `POST /api/profile HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: cow\r\n\r\n0\r\n\r\nGET /api/sessions?m=${m} HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\n\r\n`,
  },
  {
    name: "TE obs-fold",
    ambiguous: true,
    text: (h, k, m) =>
      `POST /api/profile HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nX-Pad: a\r\n Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\nGET /api/sessions?m=${m} HTTP/1.1\r\nHost: ${h}\r\n\r\n`,
  },
  {
    name: "chunk size overflow",
    ambiguous: false,
    text: (h, k) =>
      `POST /x402/web/search HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\nabc\r\n0\r\n\r\n`,
  },
  {
    name: "chunk size negative",
    ambiguous: false,
    text: (h, k) =>
      `POST /x402/web/search HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\nabc\r\n0\r\n\r\n`,
  },
  {
    name: "chunk extension",
    ambiguous: false,
    text: (h, k) =>
      `POST /x402/web/search HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nTransfer-Encoding: chunked\r\n\r\n2;ext="x"\r\n{}\r\n0\r\n\r\n`,
  },
  {
    name: "chunk bare LF",
    ambiguous: false,
    text: (h, k) => `POST /x402/web/search HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nTransfer-Encoding: chunked\r\n\r\n2\n{}\n0\n\n`,
  },
  {
    name: "chunked truncated",
    ambiguous: false,
    text: (h, k) => `POST /x402/web/search HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{"query":`,
  },
  {
    name: "CL short body",
    ambiguous: false,
    text: (h, k) => `POST /x402/web/search HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nContent-Length: 100\r\n\r\n{"query":"x"}`,
  },
  {
    name: "CL negative",
    ambiguous: false,
    text: (h, k) => `POST /api/profile HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nContent-Length: -5\r\n\r\n{}`,
  },
  {
    name: "CL plus sign",
    ambiguous: false,
    text: (h, k) => `POST /api/profile HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nContent-Length: +2\r\n\r\n{}`,
  },
  {
    name: "CL huge",
    ambiguous: false,
    text: (h, k) => `POST /x402/web/search HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nContent-Length: 99999999999999999999\r\n\r\n{}`,
  },
  {
    name: "CL hex",
    ambiguous: false,
    text: (h, k) => `POST /api/profile HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nContent-Length: 0x2\r\n\r\n{}`,
  },
  {
    name: "absolute-form",
    ambiguous: false,
    text: (h, k) => `GET http://evil.example/api/sessions HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\n\r\n`,
  },
  { name: "asterisk-form", ambiguous: false, text: (h) => `OPTIONS * HTTP/1.1\r\nHost: ${h}\r\n\r\n` },
  { name: "CONNECT", ambiguous: false, text: (h) => `CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: ${h}\r\n\r\n` },
  { name: "HTTP/1.0 no Host", ambiguous: false, text: (_h, k) => `GET /api/sessions HTTP/1.0\r\nx-api-key: ${k}\r\n\r\n` },
  { name: "HTTP/1.1 no Host", ambiguous: false, text: (_h, k) => `GET /api/sessions HTTP/1.1\r\nx-api-key: ${k}\r\n\r\n` },
  {
    name: "two Hosts",
    ambiguous: false,
    text: (h, k) => `GET /api/sessions HTTP/1.1\r\nHost: ${h}\r\nHost: evil.example\r\nx-api-key: ${k}\r\n\r\n`,
  },
  { name: "HTTP/2.0 line", ambiguous: false, text: (h) => `GET /_tollgate/health HTTP/2.0\r\nHost: ${h}\r\n\r\n` },
  { name: "HTTP/9.9 line", ambiguous: false, text: (h) => `GET /_tollgate/health HTTP/9.9\r\nHost: ${h}\r\n\r\n` },
  { name: "lowercase method", ambiguous: false, text: (h) => `get /_tollgate/health HTTP/1.1\r\nHost: ${h}\r\n\r\n` },
  { name: "space in target", ambiguous: false, text: (h) => `GET /_tollgate/ health HTTP/1.1\r\nHost: ${h}\r\n\r\n` },
  { name: "NUL in target", ambiguous: false, text: (h) => `GET /api/\u0000sessions HTTP/1.1\r\nHost: ${h}\r\n\r\n` },
  { name: "NUL in header", ambiguous: false, text: (h, k) => `GET /api/sessions HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\u0000\r\n\r\n` },
  { name: "header without colon", ambiguous: false, text: (h) => `GET /_tollgate/health HTTP/1.1\r\nHost: ${h}\r\nnocolon\r\n\r\n` },
  { name: "bare LF lines", ambiguous: false, text: (h) => `GET /_tollgate/health HTTP/1.1\nHost: ${h}\n\n` },
  { name: "long request line", ambiguous: false, text: (h) => `GET /${"a".repeat(100_000)} HTTP/1.1\r\nHost: ${h}\r\n\r\n` },
  {
    name: "many headers",
    ambiguous: false,
    text: (h) => `GET /_tollgate/health HTTP/1.1\r\nHost: ${h}\r\n${"x-h: v\r\n".repeat(3000)}\r\n`,
  },
  {
    name: "huge header",
    ambiguous: false,
    text: (h) => `GET /_tollgate/health HTTP/1.1\r\nHost: ${h}\r\nx-big: ${"v".repeat(100_000)}\r\n\r\n`,
  },
  { name: "pipelined three", ambiguous: false, text: (h) => `GET /_tollgate/health HTTP/1.1\r\nHost: ${h}\r\n\r\n`.repeat(3) },
  {
    name: "pipelined paid then free",
    ambiguous: false,
    text: (h, k) =>
      `POST /x402/web/search HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nContent-Length: 2\r\n\r\n{}GET /_tollgate/health HTTP/1.1\r\nHost: ${h}\r\n\r\n`,
  },
  {
    name: "upgrade h2c",
    ambiguous: false,
    text: (h, k) =>
      `GET /api/sessions HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n`,
  },
  {
    name: "websocket on a plain route",
    ambiguous: false,
    text: (h, k) =>
      `GET /api/sessions HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  },
  {
    name: "expect 100-continue",
    ambiguous: false,
    text: (h, k) =>
      `POST /x402/web/search HTTP/1.1\r\nHost: ${h}\r\nx-api-key: ${k}\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}`,
  },
  { name: "headers cut off", ambiguous: false, text: (h) => `GET /_tollgate/health HTTP/1.1\r\nHost: ${h}\r\nx-partial: ` },
  {
    name: "garbage",
    ambiguous: false,
    text: () => "\u0016\u0003\u0001\u0002\u0000\u0001\u0000\u0001\u00fc\u0003\u0003 not http at all\r\n\r\n",
  },
];

/** The raw cases the gateway must answer (see RawCase.mustAnswer). */
const MUST_ANSWER = new Set([
  "TE tab",
  "chunk extension",
  "absolute-form",
  "asterisk-form",
  "HTTP/1.0 no Host",
  "HTTP/1.1 no Host",
  "two Hosts",
  "pipelined three",
  "pipelined paid then free",
  "upgrade h2c",
  "websocket on a plain route",
  "expect 100-continue",
]);

export function rawCase(r: Prng, t: FuzzTarget, n: number): RawCase {
  const spec = r.pick(RAW);
  const marker = `smuggled-${n}`;
  return {
    kind: "raw",
    name: spec.name,
    payload: Buffer.from(spec.text(t.host, t.keys.acme, marker), "latin1"),
    ambiguous: spec.ambiguous,
    marker,
    mustAnswer: MUST_ANSWER.has(spec.name),
  };
}

export function* fuzzCases(seed: Prng, t: FuzzTarget, count: number, rawShare = 0.06): Generator<FuzzCase> {
  for (let n = 0; n < count; n++) yield seed.chance(rawShare) ? rawCase(seed, t, n) : httpCase(seed, t);
}
