// Structured JSON logs, one object per line, with every secret scrubbed before it is written.

export type LogLevel = "silent" | "error" | "info" | "debug";
const RANK: Record<LogLevel, number> = { silent: 0, error: 1, info: 2, debug: 3 };

export interface LogSink {
  (line: string): void;
}

const SECRET_PATTERNS: Array<[RegExp, string]> = [
  // Authorization / API key headers and bearer tokens wherever they appear in text.
  [/\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}/gi, "$1 [REDACTED]"],
  // Private keys and 32-byte hex blobs (signatures are longer and caught too).
  [/0x[0-9a-fA-F]{64,}/g, "0x[REDACTED]"],
  // Token-bearing query parameters.
  [/([?&](?:token|access_token|grant|ticket|apiKey|api_key|key|signature|sig)=)[^&\s"']+/gi, "$1[REDACTED]"],
  // JWT-looking strings.
  [/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, "[REDACTED_JWT]"],
  // Tollgate's own keys and tokens.
  [/\btg[a-z]?_[A-Za-z0-9_-]{16,}/g, "[REDACTED_KEY]"],
];

const SECRET_FIELDS =
  /^(x-api-key|authorization|payment-signature|x-payment|cookie|set-cookie|apikey|api_key|token|managementtoken|privatekey|walletkey|secret|password|signature)$/i;

/** Scrubs known secret values and secret-looking patterns from any value about to be logged. */
export class Redactor {
  /** A private field, not a property: the secrets it scrubs are not enumerable on the logger (nor in a dump of it). */
  readonly #values = new Set<string>();

  /** Registers exact secret values (API keys, wallet key, token secret) that must never be printed. */
  add(...secrets: Array<string | undefined>): this {
    for (const s of secrets) if (s && s.length >= 6) this.#values.add(s);
    return this;
  }

  text(s: string): string {
    let out = s;
    for (const v of this.#values) if (out.includes(v)) out = out.split(v).join("[REDACTED]");
    for (const [re, rep] of SECRET_PATTERNS) out = out.replace(re, rep);
    return out;
  }

  value(v: unknown, depth = 0): unknown {
    if (typeof v === "string") return this.text(v);
    if (v === null || typeof v !== "object" || depth > 6) return typeof v === "bigint" ? v.toString() : v;
    if (Array.isArray(v)) return v.map((x) => this.value(x, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = SECRET_FIELDS.test(k) && x ? "[REDACTED]" : this.value(x, depth + 1);
    return out;
  }
}

export class Logger {
  constructor(
    private readonly sink: LogSink,
    private readonly level: LogLevel,
    readonly redactor: Redactor,
    private readonly now: () => number = Date.now,
  ) {}

  enabled(level: Exclude<LogLevel, "silent">): boolean {
    return RANK[this.level] >= RANK[level];
  }

  log(level: Exclude<LogLevel, "silent">, msg: string, fields: Record<string, unknown> = {}): void {
    if (!this.enabled(level)) return;
    const entry = { time: new Date(this.now()).toISOString(), level, msg, ...(this.redactor.value(fields) as object) };
    this.sink(this.redactor.text(JSON.stringify(entry, (_k, v) => (typeof v === "bigint" ? v.toString() : v))));
  }

  info(msg: string, fields?: Record<string, unknown>) {
    this.log("info", msg, fields);
  }
  error(msg: string, fields?: Record<string, unknown>) {
    this.log("error", msg, fields);
  }
  debug(msg: string, fields?: Record<string, unknown>) {
    this.log("debug", msg, fields);
  }
}

export const stdoutSink: LogSink = (line) => console.log(line);
