// The seal of tenant secrets: AES-GCM bound to tenant and name, rotation (the first key seals, any listed opens),
// placeholders per tenant, sandbox and secret.
import { describe, expect, it } from "vitest";
import { SecretSeal, SecretUnreadable } from "./secret-seal.js";

describe("SecretSeal", () => {
  const k1 = { kid: "k1", secret: "1".repeat(40) };
  const k2 = { kid: "k2", secret: "2".repeat(40) };

  it("opens what it sealed, under its tenant and name only; never the same ciphertext twice", async () => {
    const seal = new SecretSeal([k1]);
    const s = await seal.seal("acme", "OPENAI", "sk-live-123");
    expect(s.kid).toBe("k1");
    expect(JSON.stringify(s)).not.toContain("sk-live-123");
    expect(await seal.open("acme", "OPENAI", s)).toBe("sk-live-123");
    expect((await seal.seal("acme", "OPENAI", "sk-live-123")).ct).not.toBe(s.ct);
    await expect(seal.open("initech", "OPENAI", s)).rejects.toBeInstanceOf(SecretUnreadable);
    await expect(seal.open("acme", "OTHER", s)).rejects.toBeInstanceOf(SecretUnreadable);
    await expect(seal.open("acme", "OPENAI", { ...s, ct: s.ct.replace(/^./, (c) => (c === "A" ? "B" : "A")) })).rejects.toBeInstanceOf(
      SecretUnreadable,
    );
  });

  it("rotates: the first key seals, the old one still opens, a removed one does not", async () => {
    const old = await new SecretSeal([k1]).seal("acme", "N", "v1");
    const rotated = new SecretSeal([k2, k1]);
    expect(await rotated.open("acme", "N", old)).toBe("v1");
    expect((await rotated.seal("acme", "N", "v2")).kid).toBe("k2");
    await expect(new SecretSeal([k2]).open("acme", "N", old)).rejects.toThrow(/key "k1"/);
  });

  it("makes a placeholder per tenant, sandbox and secret, stable and unguessable without the key", async () => {
    const seal = new SecretSeal([k1]);
    const p = await seal.placeholder("acme", "sb1", "OPENAI");
    expect(p).toMatch(/^tg_sec_[A-Za-z0-9_-]{32}$/);
    expect(await seal.placeholder("acme", "sb1", "OPENAI")).toBe(p);
    expect(await seal.placeholder("acme", "sb2", "OPENAI")).not.toBe(p);
    expect(await seal.placeholder("initech", "sb1", "OPENAI")).not.toBe(p);
    expect(await new SecretSeal([k2]).placeholder("acme", "sb1", "OPENAI")).not.toBe(p);
  });
});
