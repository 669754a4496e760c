// Keeps typed secrets out of the CDP messages a client receives: each value is searched in the spellings a CDP message
// can carry it in, and replaced. What it recognises is listed in docs/cdp-guard.md; a value the page or a client's script
// transforms (reversed, hashed, split) is not recognised.

const MASK = "[redacted by tollgate]";
/** Shorter spellings would match ordinary text; a secret's base64 middle shorter than this is not searched. */
export const MIN_FORM = 6;

function base64(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

/**
 * The base64 text of `bytes` wherever it starts in a longer byte string: for each of the 3 alignments, the characters
 * that depend only on the value's own bytes (the first and last partial groups dropped).
 */
function base64Forms(bytes: Uint8Array): string[] {
  const out: string[] = [];
  for (let shift = 0; shift < 3; shift++) {
    const padded = new Uint8Array(shift + bytes.length);
    padded.set(bytes, shift);
    const text = base64(padded).replace(/=+$/, "");
    // Characters covering the shift's bytes (a partial group) are dropped, and so is a trailing partial group.
    const startChar = shift === 0 ? 0 : Math.ceil((shift * 8) / 6);
    const fullBytes = padded.length - (padded.length % 3);
    const endChar = (fullBytes / 3) * 4;
    const middle = text.slice(startChar, Math.max(startChar, endChar));
    if (middle.length >= MIN_FORM) {
      out.push(middle, middle.replace(/\+/g, "-").replace(/\//g, "_"));
    }
  }
  return out;
}

/** application/x-www-form-urlencoded, as a browser sends a form (space as +, the rest percent-encoded). */
function formEncoded(value: string): string {
  return encodeURIComponent(value)
    .replace(/%20/g, "+")
    .replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** Non-ASCII as \uXXXX escapes (how some JSON encoders write a string). */
function asciiEscaped(json: string, upper: boolean): string {
  return json.replace(/[\u007f-\uffff]/g, (c) => {
    const hex = c.charCodeAt(0).toString(16).padStart(4, "0");
    return `\\u${upper ? hex.toUpperCase() : hex}`;
  });
}

/** Every spelling of `value` a CDP message (JSON text) may hold. */
function secretForms(value: string): string[] {
  const json = JSON.stringify(value).slice(1, -1);
  const texts = [
    value,
    json,
    asciiEscaped(json, false),
    asciiEscaped(json, true),
    // A JSON string inside a JSON string (Runtime.evaluate of JSON.stringify, console messages of objects).
    JSON.stringify(json).slice(1, -1),
    encodeURIComponent(value),
    encodeURIComponent(value).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
    formEncoded(value),
  ];
  // Bodies travel as base64 too (postDataEntries, Fetch, getResponseBody): each text spelling, at any offset.
  const encoder = new TextEncoder();
  const forms = new Set<string>([...texts, ...[...new Set(texts)].flatMap((t) => base64Forms(encoder.encode(t)))]);
  return [...forms].filter((f) => f.length > 0).sort((a, b) => b.length - a.length);
}

export class SecretRedaction {
  private forms: string[] = [];

  get active(): boolean {
    return this.forms.length > 0;
  }

  add(value: string): void {
    if (!value) return;
    this.forms = [...new Set([...this.forms, ...secretForms(value)])].sort((a, b) => b.length - a.length);
  }

  /** `text` with every known spelling replaced (a JSON text stays valid: the mask has no quote or backslash). */
  apply(text: string): string {
    let out = text;
    for (const f of this.forms) if (out.includes(f)) out = out.split(f).join(MASK);
    return out;
  }
}
