// `tollgate wallet approve`: the one-time ERC-20 approval of Permit2 that `exact`-over-Permit2 and `upto` payments need
// (per token and chain). The gateway never gives it by itself; an operator runs this, with the wallet's key in
// TOLLGATE_WALLET_KEY, or with --print to get the transaction to send from wherever the key is (a PKCS#11 token, a
// remote signer: they sign payments, not transactions). `tollgate wallet allowance` reads what is approved.
import { parseArgs } from "node:util";
import { createPublicClient, createWalletClient, defineChain, encodeFunctionData, erc20Abi, http, maxUint256 } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { loadConfigFile } from "../../config/load-node.js";
import { PERMIT2_ADDRESS, usdToAtomic } from "../payments/index.js";

const USAGE =
  "tollgate wallet approve --network eip155:N --asset 0x… (--rpc URL | --config FILE) [--account ID] [--amount USD] [--print]\n" +
  "tollgate wallet allowance --network eip155:N --asset 0x… (--rpc URL | --config FILE) [--account ID] [--owner 0x…]\n" +
  "  key: TOLLGATE_WALLET_KEY (0x + 64 hex); --print needs none and prints the transaction to send instead\n" +
  "  --account ID (with --config FILE): the wallet of upstream account ID (its walletKeyEnv or walletKeyFile) instead";

const OPTIONS = {
  network: { type: "string" },
  asset: { type: "string" },
  rpc: { type: "string" },
  config: { type: "string" },
  amount: { type: "string" },
  owner: { type: "string" },
  print: { type: "boolean" },
  account: { type: "string" },
} as const;

const WALLET_KEY = /^0x[0-9a-fA-F]{64}$/;

/**
 * `--account ID`: the wallet key of that [[upstream.accounts]] entry of the --config file, from its walletKeyEnv or
 * walletKeyFile (docs/accounts.md#wallets). @throws Error naming the account's field, never the key.
 */
async function accountWalletKey(sub: string, id: string, configFile: string | undefined): Promise<`0x${string}`> {
  if (!configFile) throw new Error(`tollgate wallet ${sub}: --account needs --config FILE (where the account is configured)\n${USAGE}`);
  const accounts = (await loadConfigFile(configFile)).upstream.accounts ?? [];
  const i = accounts.findIndex((a) => a.id === id);
  if (i < 0)
    throw new Error(
      `tollgate wallet ${sub}: --account: no upstream account "${id}" in ${configFile}${accounts.length ? ` (expected one of ${accounts.map((a) => a.id).join(", ")})` : ""}`,
    );
  const a = accounts[i]!;
  if (a.walletSigner)
    throw new Error(
      `tollgate wallet ${sub}: upstream.accounts[${i}] ("${id}") keeps its wallet in a remote signer (walletSigner), which signs payments, not transactions: ${sub === "approve" ? "use --print and send the transaction from that wallet" : "pass --owner 0x… (the signer's address) instead of --account"}`,
    );
  if (!a.walletKeyEnv && !a.walletKeyFile)
    throw new Error(
      `tollgate wallet ${sub}: upstream.accounts[${i}] ("${id}") names no wallet (walletKeyEnv or walletKeyFile); the gateway's wallet pays for it`,
    );
  const field = `upstream.accounts[${i}].${a.walletKeyFile ? "walletKeyFile" : "walletKeyEnv"}`;
  let v: string | undefined;
  if (a.walletKeyFile) {
    const { readFile } = await import("node:fs/promises");
    v = await readFile(a.walletKeyFile, "utf8").then(
      (t) => t.trim(),
      (err: NodeJS.ErrnoException) => {
        throw new Error(`${field}: cannot read ${a.walletKeyFile}: ${err.code ?? String(err)}`);
      },
    );
  } else v = process.env[a.walletKeyEnv!]?.trim();
  if (!v)
    throw new Error(
      `${field}: ${a.walletKeyFile ? `${a.walletKeyFile} is empty` : `the environment variable ${a.walletKeyEnv} is not set`}`,
    );
  if (!WALLET_KEY.test(v)) throw new Error(`${field}: expected 0x followed by 64 hex characters`);
  return v as `0x${string}`;
}

export async function cmdWallet(sub: string | undefined, args: string[]): Promise<void> {
  if (sub !== "approve" && sub !== "allowance") throw new Error(USAGE);
  const { values } = parseArgs({ args, options: OPTIONS });
  const network = values.network;
  const m = /^eip155:(\d+)$/.exec(network ?? "");
  if (!m) throw new Error(`tollgate wallet ${sub}: --network must be an EVM network as CAIP-2 (eip155:<chain id>)\n${USAGE}`);
  if (!/^0x[0-9a-fA-F]{40}$/.test(values.asset ?? ""))
    throw new Error(`tollgate wallet ${sub}: --asset must be the token's 0x address\n${USAGE}`);
  const asset = values.asset as `0x${string}`;
  const amount = values.amount === undefined ? maxUint256 : usdToAtomic(values.amount);
  const data = encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [PERMIT2_ADDRESS, amount] });
  const shown = values.amount === undefined ? "unlimited" : `$${values.amount}`;
  if (sub === "approve" && values.print) {
    process.stdout.write(
      `Send from ${values.account !== undefined ? `upstream account ${values.account}'s wallet` : "the gateway's wallet"} on ${network} (approves Permit2 ${PERMIT2_ADDRESS} for ${shown} of ${asset}):\n\n` +
        `  to    ${asset}\n  value 0\n  data  ${data}\n`,
    );
    return;
  }
  let rpcUrl = values.rpc;
  if (!rpcUrl && values.config) rpcUrl = (await loadConfigFile(values.config)).payments.rpc[network!];
  if (!rpcUrl)
    throw new Error(`tollgate wallet ${sub}: no RPC for ${network}: pass --rpc URL, or --config FILE with payments.rpc["${network}"]`);
  const chain = defineChain({
    id: Number(m[1]),
    name: network!,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const transport = http(rpcUrl, { retryCount: 1, timeout: 30_000 });
  const reader = createPublicClient({ chain, transport, pollingInterval: 250 });
  const key =
    values.account !== undefined && !(sub === "allowance" && values.owner)
      ? await accountWalletKey(sub, values.account, values.config)
      : process.env.TOLLGATE_WALLET_KEY;
  const owner = (values.owner ?? (key && WALLET_KEY.test(key) ? privateKeyToAccount(key as `0x${string}`).address : undefined)) as
    | `0x${string}`
    | undefined;
  if (sub === "allowance") {
    if (!owner) throw new Error("tollgate wallet allowance: --owner 0x… (or TOLLGATE_WALLET_KEY) is required");
    const allowance = await reader.readContract({
      address: asset,
      abi: erc20Abi,
      functionName: "allowance",
      args: [owner, PERMIT2_ADDRESS],
    });
    process.stdout.write(
      `${owner} allows Permit2 ${allowance === maxUint256 ? "unlimited" : allowance.toString()} atomic units of ${asset}\n`,
    );
    return;
  }
  if (!key || !WALLET_KEY.test(key))
    throw new Error(
      "tollgate wallet approve: TOLLGATE_WALLET_KEY (0x + 64 hex) is required; or use --print and send the transaction yourself",
    );
  const account = privateKeyToAccount(key as `0x${string}`);
  const wallet = createWalletClient({ account, chain, transport });
  const hash = await wallet
    .writeContract({ address: asset, abi: erc20Abi, functionName: "approve", args: [PERMIT2_ADDRESS, amount] })
    .catch((err: { shortMessage?: string; message?: string }) => {
      // viem's one-line reason (e.g. no gas in the wallet), not its multi-line report of the call.
      throw new Error(`the approval of Permit2 from ${account.address} was not sent: ${err.shortMessage ?? err.message}`);
    });
  const receipt = await reader.waitForTransactionReceipt({ hash, timeout: 120_000 });
  if (receipt.status !== "success") throw new Error(`the approval transaction ${hash} reverted`);
  process.stdout.write(
    `${account.address} approved Permit2 ${PERMIT2_ADDRESS} for ${shown} of ${asset} on ${network}\n  transaction ${hash}\n`,
  );
}
