// A wallet comes back to what it bought with sign-in-with-x (CAIP-122; @x402/extensions' client helpers and a viem
// account's real signature), instead of the wallet token: the proof is checked against the gateway's origin, its chain
// against the accepted networks, its nonce used once; another wallet's proof gets 404 for the same sandbox.
import { decodePaymentRequiredHeader } from "@x402/core/http";
import {
  type CompleteSIWxInfo,
  createSIWxPayload,
  encodeSIWxHeader,
  SIGN_IN_WITH_X,
  type SIWxExtensionInfo,
  wrapFetchWithSIWx,
} from "@x402/extensions/sign-in-with-x";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmulatorHandle } from "../../emulator/index.js";
import { type Buyer, json, type SellingStack, startSalesEmulator, startSellingGateway, v2Buyer } from "./stack.js";

describe("sign-in-with-x: a wallet comes back to what it bought", () => {
  let emu: EmulatorHandle;
  let s: SellingStack;
  let alice: Buyer;
  let bob: Buyer;
  let sandboxId: string;
  beforeAll(async () => {
    emu = await startSalesEmulator(["x402", "sandboxes"]);
    s = await startSellingGateway(emu);
    [alice, bob] = await Promise.all([v2Buyer(emu), v2Buyer(emu)]);
    const r = await alice.pay(`${s.gateway.url}/api/sandbox`, json({ imageName: "node" }));
    expect(r.status).toBe(200);
    sandboxId = (await r.json()).id;
    expect((await bob.pay(`${s.gateway.url}/x402/web/search`, json({ query: "bob buys a search" }))).status).toBe(200);
  }, 180_000);
  afterAll(async () => {
    await s?.close();
    await emu?.close();
  });

  /** fetch that signs in with `privateKey` on a 402 carrying the challenge, recording the proofs it sent. */
  const signingIn = (privateKey: `0x${string}`) => {
    const sent: string[] = [];
    const f = wrapFetchWithSIWx(async (input, init) => {
      const req = new Request(input, init);
      const proof = req.headers.get(SIGN_IN_WITH_X);
      if (proof) sent.push(proof);
      return fetch(req);
    }, privateKeyToAccount(privateKey));
    return { fetch: f, sent };
  };

  /** A fresh challenge, as the gateway's 402 declares it. */
  const challenge = async () => {
    const r = await fetch(`${s.gateway.url}/api/sandbox/${sandboxId}`);
    expect(r.status).toBe(402);
    expect((await r.json()).code).toBe("sign_in_required");
    return decodePaymentRequiredHeader(r.headers.get("payment-required")!).extensions![SIGN_IN_WITH_X] as {
      info: SIWxExtensionInfo;
      supportedChains: Array<{ chainId: string; type: "eip191" }>;
    };
  };

  it("the sale's 402 declares the extension: the gateway's origin, the accepted chain, a nonce, five minutes", async () => {
    const r = await fetch(`${s.gateway.url}/api/sandbox`, json({ imageName: "node" }));
    expect(r.status).toBe(402);
    const ext = decodePaymentRequiredHeader(r.headers.get("payment-required")!).extensions![SIGN_IN_WITH_X] as {
      info: SIWxExtensionInfo;
      supportedChains: unknown[];
      schema: unknown;
    };
    expect(ext.info.domain).toBe(new URL(s.gateway.url).host);
    expect(ext.info.uri).toBe(`${s.gateway.url}/api/sandbox`);
    expect(ext.info.nonce).toMatch(/^[0-9a-f]{48}$/);
    expect(Date.parse(ext.info.expirationTime!) - Date.parse(ext.info.issuedAt)).toBe(300_000);
    expect(ext.supportedChains).toEqual([{ chainId: emu.chain!.network, type: "eip191" }]);
    expect(ext.schema).toBeTruthy();
  });

  it("the buyer signs in and reads its sandbox; the same proof again is refused (nonce used)", async () => {
    const a = signingIn(alice.privateKey);
    const r = await a.fetch(`${s.gateway.url}/api/sandbox/${sandboxId}`);
    expect(r.status).toBe(200);
    expect((await r.json()).id).toBe(sandboxId);
    expect(a.sent).toHaveLength(1);
    const replay = await fetch(`${s.gateway.url}/api/sandbox/${sandboxId}`, { headers: { [SIGN_IN_WITH_X]: a.sent[0]! } });
    expect(replay.status).toBe(401);
    expect((await replay.json()).code).toBe("invalid_siwx_nonce");
  });

  it("another wallet's proof gets 404 for the same sandbox; a wallet that bought nothing too", async () => {
    const b = signingIn(bob.privateKey);
    const r = await b.fetch(`${s.gateway.url}/api/sandbox/${sandboxId}`);
    expect(r.status).toBe(404);
    const stranger = signingIn(`0x${"11".repeat(32)}`);
    expect((await stranger.fetch(`${s.gateway.url}/api/sandbox/${sandboxId}`)).status).toBe(404);
  });

  it("a proof for another origin, another chain or a nonce the gateway never issued is refused", async () => {
    const account = privateKeyToAccount(alice.privateKey);
    const send = (proof: string) => fetch(`${s.gateway.url}/api/sandbox/${sandboxId}`, { headers: { [SIGN_IN_WITH_X]: proof } });
    const sign = async (info: CompleteSIWxInfo, url: string) => encodeSIWxHeader(await createSIWxPayload(info, account, url));
    const base = async () => {
      const c = await challenge();
      return { ...c.info, chainId: c.supportedChains[0]!.chainId, type: "eip191" as const };
    };
    // Signed for a look-alike origin (a phishing page relaying the gateway's challenge).
    const evil = { ...(await base()), domain: "evil.example", uri: "https://evil.example/api/sandbox" };
    const r1 = await send(await sign(evil, "https://evil.example/api/sandbox"));
    expect(r1.status).toBe(401);
    expect((await r1.json()).code).toBe("invalid_siwx_domain_mismatch");
    // Another chain than the accepted one.
    const r2 = await send(await sign({ ...(await base()), chainId: "eip155:1" }, `${s.gateway.url}/api/sandbox/${sandboxId}`));
    expect(r2.status).toBe(401);
    expect((await r2.json()).code).toBe("invalid_siwx_chain_id");
    // A nonce of the client's own making.
    const r3 = await send(await sign({ ...(await base()), nonce: "a".repeat(48) }, `${s.gateway.url}/api/sandbox/${sandboxId}`));
    expect(r3.status).toBe(401);
    expect((await r3.json()).code).toBe("invalid_siwx_nonce");
  });

  it("the buyer stops its sandbox signed in", async () => {
    const a = signingIn(alice.privateKey);
    const r = await a.fetch(`${s.gateway.url}/api/sandbox/${sandboxId}/stop`, { method: "PUT" });
    expect(r.status).toBe(200);
    const up = await fetch(`${emu.controlUrl}/api/sandbox/${sandboxId}`, { headers: { "x-api-key": emu.apiKey } });
    expect((await up.json()).status).toBe("closed");
  });
});
