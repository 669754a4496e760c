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

/** Matches wherever one of SECRET_PATTERNS could: a line it does not match is not run through each of them. */
const MAYBE_SECRET = /bearer|0x[0-9a-f]{64}|[?&](?:token|access_token|grant|ticket|apikey|api_key|key|signature|sig)=|eyJ|tg[a-z]?_/i;

const SECRET_FIELDS =
  /^(x-api-key|authorization|payment-signature|x-payment|cookie|set-cookie|apikey|api_key|token|managementtoken|privatekey|walletkey|secret|password|signature)$/i;

/** Scrubs known secret values and secret-looking patterns from any value about to be logged. */
export class Redactor {
  /** A private field, not a property: the secrets it scrubs are not enumerable on the logger (nor in a dump of it). */
  readonly #values = new Set<string>();

  /** Registers exact secret values (API keys, wallet key, token secret) that must never be printed. */
  add(...secrets: Array<string | undefined>): this {
    for (const s of secrets)
      if (s && s.length >= 6) {
        this.#values.add(s);
        // Lines are scrubbed once serialised: a secret with a quote, backslash or control character appears escaped there.
        const escaped = JSON.stringify(s).slice(1, -1);
        if (escaped !== s) this.#values.add(escaped);
      }
    return this;
  }

  text(s: string): string {
    let out = s;
    for (const v of this.#values) if (out.includes(v)) out = out.split(v).join("[REDACTED]");
    if (MAYBE_SECRET.test(out)) for (const [re, rep] of SECRET_PATTERNS) out = out.replace(re, rep);
    return out;
  }
}

/** Characters JSON.stringify escapes: a string holding one is scrubbed before it is serialised (see Logger.replacer). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters JSON escapes are what it looks for
const ESCAPED_IN_JSON = /["\\\u0000-\u001f\ud800-\udfff]/;

export class Logger {
  constructor(
    private readonly sink: LogSink,
    private readonly level: LogLevel,
    readonly redactor: Redactor,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * JSON.stringify's replacer for log entries: a secret-named field (at any depth) is written as [REDACTED], a bigint as
   * its digits. Other values are scrubbed on the serialised line (Redactor.text), which reads a string as it is unless
   * JSON escaped part of it (a quote, a backslash, a line break in a stack trace): such a string is scrubbed here first.
   */
  private readonly replacer = (key: string, value: unknown): unknown => {
    if (typeof value === "string") {
      if (key && SECRET_FIELDS.test(key) && value) return "[REDACTED]";
      return ESCAPED_IN_JSON.test(value) ? this.redactor.text(value) : value;
    }
    if (typeof value === "bigint") return value.toString();
    return value && key && SECRET_FIELDS.test(key) ? "[REDACTED]" : value;
  };

  /**
   * Each field name as a line writes it (`,"name":`) and whether it is a secret's; null for a name JSON escapes (left
   * to the replacer, see flat()). The names are the code's own, a small set.
   */
  private readonly names = new Map<string, { head: string; secret: boolean } | null>();

  private nameOf(k: string): { head: string; secret: boolean } | null {
    let n = this.names.get(k);
    if (n === undefined) {
      const json = JSON.stringify(k);
      n = json.includes("\\") ? null : { head: `,${json}:`, secret: SECRET_FIELDS.test(k) };
      if (this.names.size < 1024) this.names.set(k, n);
    }
    return n;
  }

  /**
   * The fields as a line's tail (`,"a":1,"b":"x"`), written as JSON.stringify would write them, when they serialise as
   * they are: flat strings none of which JSON escapes, numbers, bigints, booleans, nulls, no secret-named field with a value.
   * Otherwise undefined, and they go through the replacer (nested values, a secret-named field, and a string
   * JSON would escape, as an escape might split a secret). One walk, no second copy of the fields.
   */
  private flat(fields: Record<string, unknown>): string | undefined {
    let out = "";
    for (const k in fields) {
      const v = fields[k];
      let json: string;
      switch (typeof v) {
        case "string":
          if (ESCAPED_IN_JSON.test(v)) return undefined;
          json = `"${v}"`;
          break;
        case "number":
          json = Number.isFinite(v) ? `${v}` : "null";
          break;
        case "boolean":
          json = v ? "true" : "false";
          break;
        case "bigint":
          // As the replacer writes it: its digits, a string.
          json = `"${v}"`;
          break;
        case "undefined":
          continue;
        default:
          if (v !== null) return undefined;
          json = "null";
      }
      const name = this.nameOf(k);
      if (name === null || (name.secret && v)) return undefined;
      out += name.head + json;
    }
    return out;
  }

  /** The last time stamp written, by the millisecond (a busy gateway writes many lines in each). */
  private lastMs = Number.NaN;
  private lastTime = "";
  /** The stamp's head to the second (`2026-12-06T17:17:39.`), and the second it is of. */
  private headSecond = Number.NaN;
  private head = "";

  /**
   * `Date.prototype.toISOString()` of now. Its head changes once a second: only then is a Date formatted (~2.7 µs on
   * a loaded 2-core host, a line in a new millisecond each at a few thousand lines a second), otherwise the
   * milliseconds are put on the kept head (~0.2 µs).
   */
  private timeNow(): string {
    const ms = this.now();
    if (ms !== this.lastMs) {
      this.lastMs = ms;
      const second = Math.floor(ms / 1000);
      const milli = ms - second * 1000;
      if (second !== this.headSecond || !Number.isInteger(milli)) {
        const iso = new Date(ms).toISOString();
        // Years past 9999 (or before 0) are written with a sign and six digits: the head is cut where the dot is.
        this.head = iso.slice(0, iso.length - 4);
        this.headSecond = Number.isInteger(milli) ? second : Number.NaN;
        this.lastTime = iso;
        return iso;
      }
      this.lastTime = `${this.head}${milli < 10 ? "00" : milli < 100 ? "0" : ""}${milli}Z`;
    }
    return this.lastTime;
  }

  enabled(level: Exclude<LogLevel, "silent">): boolean {
    return RANK[this.level] >= RANK[level];
  }

  log(level: Exclude<LogLevel, "silent">, msg: string, fields: Record<string, unknown> = {}): void {
    if (!this.enabled(level)) return;
    const time = this.timeNow();
    let line: string | undefined;
    try {
      // The entry's head, then the fields as the caller built them (no copy); see flat().
      const rest = ESCAPED_IN_JSON.test(msg) ? undefined : this.flat(fields);
      if (rest !== undefined) line = `{"time":"${time}","level":"${level}","msg":"${msg}"${rest}}`;
      line ??= JSON.stringify({ time, level, msg, ...fields }, this.replacer);
    } catch {
      // A field that cannot be serialised (a cycle) loses the fields, never the line.
      line = JSON.stringify({ time, level, msg, logError: "fields not serialisable" });
    }
    this.sink(this.redactor.text(line));
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
