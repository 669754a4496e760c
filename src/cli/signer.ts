// `tollgate signer keygen`: makes the wallet's secp256k1 key pair inside a PKCS#11 token (it never leaves it) and
// prints its address and the config lines that use it. The PIN comes from TOLLGATE_PKCS11_PIN, never an argument.
import { parseArgs } from "node:util";
import { generatePkcs11Key } from "../platform/node/pkcs11-signer.js";

export async function cmdSigner(sub: string | undefined, args: string[]): Promise<void> {
  if (sub !== "keygen") throw new Error("tollgate signer keygen --token LABEL [--label KEY_LABEL] [--module PATH]");
  const { values } = parseArgs({
    args,
    options: { token: { type: "string" }, label: { type: "string" }, module: { type: "string" } },
  });
  if (!values.token) throw new Error("tollgate signer keygen: --token LABEL (the PKCS#11 token to make the key in) is required");
  const opts = {
    module: values.module ?? "/usr/lib/softhsm/libsofthsm2.so",
    tokenLabel: values.token,
    keyLabel: values.label ?? "tollgate-wallet",
  };
  const address = generatePkcs11Key(opts, process.env.TOLLGATE_PKCS11_PIN);
  process.stdout.write(
    `New wallet key in token "${opts.tokenLabel}" (label "${opts.keyLabel}"; it cannot be read out of the token):\n\n` +
      `  address ${address}\n\nFund that address, then in your config:\n\n` +
      `  [wallet]\n  signer = "pkcs11"\n  [wallet.pkcs11]\n  module = "${opts.module}"\n  tokenLabel = "${opts.tokenLabel}"\n  keyLabel = "${opts.keyLabel}"\n\n` +
      "and start the gateway with TOLLGATE_PKCS11_PIN set and TOLLGATE_WALLET_KEY unset.\n",
  );
}
