// A fully read upstream answer: what the cache, coalescing and idempotency keep and replay.
import { GatewayError } from "../errors.js";
import { atomicToUsd } from "../payments/index.js";

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
  /** Atomic units paid for it (by the request that fetched it). */
  paid: bigint;
  storedAt: number;
}

/** Headers of an upstream answer worth replaying (content type and the like; never payment or hop-by-hop). */
const KEEP = new Set(["content-type", "content-language", "x-request-id"]);

export async function readAnswer(res: Response, paid: bigint, now: number): Promise<Answer> {
  const headers: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    if (KEEP.has(k)) headers[k] = v;
  });
  let body: Uint8Array;
  try {
    body = new Uint8Array(await res.arrayBuffer());
  } catch {
    // The upstream (or the network) cut the answer off; whatever was paid for it stays paid, and the ledger says so.
    throw new GatewayError(
      502,
      "upstream_answer_incomplete",
      `The upstream's answer broke off before it was complete${paid > 0n ? ` (the call was paid, $${atomicToUsd(paid)})` : ""}. Retry with the same Idempotency-Key to avoid paying twice.`,
      paid > 0n ? { paid: atomicToUsd(paid) } : {},
    );
  }
  return { status: res.status, headers, body, paid, storedAt: now };
}

/** The answer as a Response: `headers`, the whole record it is written with (the answer's own kept headers included). */
export function answerResponse(a: Answer, headers: Record<string, string>): Response {
  return new Response(a.body.byteLength ? (a.body as BodyInit) : null, { status: a.status, headers });
}

/**
 * Canonical JSON: keys sorted at every depth, so equal requests have equal text whatever their key order. Recursive:
 * its callers pass bodies read by src/routing/json-body.ts, whose depth check (JSON_MAX_DEPTH) runs before parsing.
 */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}

export async function sha256Hex(text: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Bytes ↔ base64 for answers kept in shared state (Web-standard btoa/atob, so it runs on Workers too). */
export function toBase64(u: Uint8Array): string {
  let s = "";
  for (let i = 0; i < u.length; i += 0x8000) s += String.fromCharCode(...u.subarray(i, i + 0x8000));
  return btoa(s);
}

export function fromBase64(s: string): Uint8Array {
  return Uint8Array.from(atob(s), (ch) => ch.charCodeAt(0));
}
