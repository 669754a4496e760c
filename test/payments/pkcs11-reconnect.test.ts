// The PKCS#11 signer when its session or its token goes away (SoftHSM2, a real PKCS#11 module): every session closed
// under it (an HSM restarted, a network HSM's connection dropped) is reopened at the next signature, logged in again,
// the key checked to be the same wallet's; a token that is gone fails each signature (nothing signed) until it is back.
import { execFile, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, rename, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { recoverTypedDataAddress, type TypedDataDefinition } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPkcs11Signer } from "../../src/host/node/pkcs11-signer.js";
import type { WalletSigner } from "../../src/payments/wallet-signer.js";

const run = promisify(execFile);
const MODULE = "/usr/lib/softhsm/libsofthsm2.so";
const TOKEN = "tollgate-reconnect";
const PIN = randomBytes(6).toString("hex");

let dir: string;
let address: `0x${string}`;

const typedData = (i: number) => ({
  domain: { name: "USD Coin", version: "2", chainId: 31337, verifyingContract: "0x00000000000000000000000000000000000000aa" },
  types: {
    Payment: [
      { name: "to", type: "address" },
      { name: "value", type: "uint256" },
    ],
  },
  primaryType: "Payment",
  message: { to: "0x00000000000000000000000000000000000000bb", value: BigInt(i) },
});

const recovers = async (signer: WalletSigner, i: number) => {
  const data = typedData(i);
  const signature = await signer.signTypedData(data);
  return recoverTypedDataAddress({ ...(data as unknown as TypedDataDefinition), signature });
};

/** Every session of this process on the token closed from outside the signer, as a restarted HSM would. */
function closeAllSessions() {
  const p = createRequire(import.meta.url)("pkcs11js") as typeof import("pkcs11js");
  const lib = new p.PKCS11();
  lib.load(MODULE);
  try {
    lib.C_Initialize();
  } catch {
    /* initialised already by the signer: the same module state */
  }
  for (const slot of lib.C_GetSlotList(true)) if (lib.C_GetTokenInfo(slot).label.trim() === TOKEN) lib.C_CloseAllSessions(slot);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "tg-hsm-reconnect-"));
  await writeFile(join(dir, "softhsm2.conf"), `directories.tokendir = ${dir}/tokens\nobjectstore.backend = file\nlog.level = ERROR\n`);
  await run("mkdir", ["-p", join(dir, "tokens")]);
  const env = { ...process.env, SOFTHSM2_CONF: join(dir, "softhsm2.conf") };
  execFileSync("softhsm2-util", ["--init-token", "--free", "--label", TOKEN, "--so-pin", `so${PIN}`, "--pin", PIN], {
    env,
    stdio: "ignore",
  });
  process.env.SOFTHSM2_CONF = env.SOFTHSM2_CONF;
  const { stdout } = await run(process.execPath, ["--import", "tsx", "src/cli/index.ts", "signer", "keygen", "--token", TOKEN], {
    env: { ...env, TOLLGATE_PKCS11_PIN: PIN },
    timeout: 60_000,
  });
  address = /address (0x[0-9a-fA-F]{40})/.exec(stdout)![1] as `0x${string}`;
}, 90_000);
afterAll(async () => {
  delete process.env.SOFTHSM2_CONF;
  await rm(dir, { recursive: true, force: true });
});

describe("the PKCS#11 signer when the token goes away", () => {
  it("reopens its session after every session was closed under it, and signs as the same wallet", async () => {
    const signer = openPkcs11Signer({ module: MODULE, tokenLabel: TOKEN, keyLabel: "tollgate-wallet" }, PIN);
    try {
      expect(await recovers(signer, 1)).toBe(address);
      closeAllSessions();
      expect(await recovers(signer, 2)).toBe(address);
      // And again: each loss is recovered, signatures in between go on the new session.
      closeAllSessions();
      const many = await Promise.all([3, 4, 5, 6].map((i) => recovers(signer, i)));
      expect(many).toEqual([address, address, address, address]);
    } finally {
      await signer.close?.();
    }
  });

  it("fails each signature while the token is gone (nothing signed), and signs again once it is back", async () => {
    const signer = openPkcs11Signer({ module: MODULE, tokenLabel: TOKEN, keyLabel: "tollgate-wallet" }, PIN);
    const tokens = join(dir, "tokens");
    const [tokenDir] = await readdir(tokens);
    try {
      expect(await recovers(signer, 7)).toBe(address);
      // The token is unplugged: its sessions end and it is no longer in its slot.
      closeAllSessions();
      await rename(join(tokens, tokenDir!), join(dir, "away"));
      await expect(signer.signTypedData(typedData(8))).rejects.toThrow(/no token labelled "tollgate-reconnect"/);
      await expect(signer.signTypedData(typedData(9))).rejects.toThrow(/no token labelled/);
      // Plugged back in: the next signature finds it, logs in and signs as the same wallet.
      await rename(join(dir, "away"), join(tokens, tokenDir!));
      expect(await recovers(signer, 10)).toBe(address);
    } finally {
      await signer.close?.();
    }
  });
});
