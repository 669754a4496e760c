// What `tollgate dev` (and `npm start`) prints once ready, on stdout: where everything is, the demo keys, commands to
// try, and, last, the demo keys again on one line of their own ("tollgate demo keys: …"), so they stay at the bottom of
// the start-up output and can be found with grep. The request log goes to stderr; SIGUSR2 prints the keys line again.

export interface DevBannerInfo {
  gateway: string;
  upstream: string;
  chain: string | null;
  /** The gateway's payer wallet (Node stack). */
  payer?: string;
  tenants: Record<string, string>;
  /** The demo buyer (a funded wallet's key) and the asset the gateway sells for, when it sells ([sales]). */
  buyer?: { key: string; network: string; asset: string };
  /** Seconds from the command to ready. */
  readySeconds?: number;
  /** The gateway runs as the Worker under `wrangler dev`. */
  worker?: boolean;
  pid: number;
}

const ROLES: Record<string, string> = {
  acme: "everything but admin; $5.00/day",
  initech: "the same, to see isolation: acme's ids answer 404 here",
  globex: "search only; $0.05/day",
  ops: "admin",
};

/** The one line naming every demo key: the last line the start-up prints, and what SIGUSR2 prints again. */
export function demoKeysLine(tenants: Record<string, string>): string {
  return `tollgate demo keys: ${Object.entries(tenants)
    .map(([id, key]) => `${id}=${key}`)
    .join(" ")}`;
}

export function devBanner(i: DevBannerInfo): string {
  const g = i.gateway;
  const k = i.tenants.acme ?? Object.values(i.tenants)[0] ?? "";
  const ops = i.tenants.ops ?? "";
  const width = Math.max(...Object.keys(i.tenants).map((id) => id.length));
  const ready = i.readySeconds !== undefined ? ` (ready in ${i.readySeconds.toFixed(1)} s)` : "";
  return `
Tollgate is running${i.worker ? " as the Worker under `wrangler dev` (workerd)" : ""}${ready}

  gateway   ${g}
  upstream  ${i.upstream}   (local emulator)
  chain     ${i.chain ?? "-"}${i.payer ? `   (anvil, payer ${i.payer})` : ""}
  console   ${g}/_tollgate/console   (sign in with the ops key below, or a tenant's)
  requests  ${g}/_tollgate/console/requests   (each tenant's last requests)

Demo tenants (keys are new on every start):
${Object.entries(i.tenants)
  .map(([id, key]) => `  ${id.padEnd(width)} ${key}   ${ROLES[id] ?? ""}`.trimEnd())
  .join("\n")}

Try it:
  curl -s ${g}/x402/web/search -H 'x-api-key: ${k}' -H 'content-type: application/json' -d '{"query":"electric vehicle charging"}'
  curl -s ${g}/_tollgate/usage -H 'x-api-key: ${k}'
  curl -s '${g}/_tollgate/requests?status=error' -H 'x-api-key: ${k}'
  ./bin/tollgate.js tenants list --gateway ${g} --admin-key ${ops}
  ./bin/tollgate.js console link --gateway ${g} --admin-key ${ops}

  // SDK (npm i @hyperbrowser/sdk)
  import { Hyperbrowser } from "@hyperbrowser/sdk";
  const client = new Hyperbrowser({ apiKey: "${k}", baseUrl: "${g.replace("127.0.0.1", "localhost")}" });
  const sbx = await client.sandboxes.create({ imageName: "node" });
  console.log((await sbx.exec("echo hello from the sandbox")).stdout);

${i.buyer ? `${walletExample(g, i.buyer)}\n` : ""}The request log goes to stderr (\`2>tollgate.log\` keeps this screen); \`kill -USR2 ${i.pid}\` prints the keys again.
Ctrl-C stops everything.

${demoKeysLine(i.tenants)}
`;
}

/**
 * Five lines that buy a search with nothing but the demo buyer's wallet (@x402/fetch): the gateway answers 402, the
 * client signs, the gateway settles (docs/sales.md). The key is the demo's, new on every start, holding test tokens.
 */
function walletExample(g: string, b: { key: string; network: string; asset: string }): string {
  return `  // Pay with a wallet, no key (npm i @x402/fetch @x402/evm viem): the demo buyer holds 10 test dollars
  import { x402Client, wrapFetchWithPayment } from "@x402/fetch"; import { registerExactEvmScheme } from "@x402/evm/exact/client";
  import { privateKeyToAccount } from "viem/accounts";
  const client = new x402Client().setSpendControls({ allowedAssets: [{ network: "${b.network}", asset: "${b.asset}", maxAmountPerPayment: "100000" }] });
  registerExactEvmScheme(client, { signer: privateKeyToAccount("${b.key}") });
  console.log(await (await wrapFetchWithPayment(fetch, client)("${g}/x402/web/search", { method: "POST", headers: { "content-type": "application/json" }, body: '{"query":"edge caching"}' })).json());
`;
}

/** Prints the keys line again on SIGUSR2 (on stdout, where the banner is). */
export function keysOnDemand(tenants: Record<string, string>): void {
  process.on("SIGUSR2", () => void process.stdout.write(`${demoKeysLine(tenants)}\n`));
}
