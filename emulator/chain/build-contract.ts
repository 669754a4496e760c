// Compiles the emulator's Solidity contracts with npm solc into committed JSON artifacts (abi + bytecode).
// Run: npx tsx emulator/chain/build-contract.ts   (offline; ~1 s). The chain loads the artifacts, never solc.
import { createRequire } from "node:module";
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
const solc = require("solc") as { compile(input: string): string; version(): string };

const here = dirname(fileURLToPath(import.meta.url));
const contractsDir = join(here, "contracts");
/** The EVM version every target here supports (anvil 1.x defaults to a later one). */
const EVM_VERSION = "cancun";

interface Artifact {
  contractName: string;
  compiler: string;
  evmVersion: string;
  abi: unknown[];
  bytecode: `0x${string}`;
  deployedBytecode: `0x${string}`;
}

export async function buildContracts(): Promise<Artifact[]> {
  const files = ["TestUSDC.sol", "Multicall3.sol", "Permit2Lite.sol", "X402ExactPermit2Proxy.sol", "X402UptoPermit2Proxy.sol"];
  /** Imported by the files above, deployed nowhere: compiled with them, no artifact of their own. */
  const shared = ["X402Permit2ProxyBase.sol"];
  const sources: Record<string, { content: string }> = {};
  for (const f of [...files, ...shared]) sources[f] = { content: await readFile(join(contractsDir, f), "utf8") };
  const input = {
    language: "Solidity",
    sources,
    settings: {
      evmVersion: EVM_VERSION,
      optimizer: { enabled: true, runs: 200 },
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (output.errors ?? []).filter((e: { severity: string }) => e.severity === "error");
  if (errors.length) throw new Error(errors.map((e: { formattedMessage: string }) => e.formattedMessage).join("\n"));
  const artifacts: Artifact[] = [];
  for (const f of files) {
    const contractName = f.replace(/\.sol$/, "");
    const c = output.contracts[f][contractName];
    const artifact: Artifact = {
      contractName,
      compiler: `solc-js ${solc.version()}`,
      evmVersion: EVM_VERSION,
      abi: c.abi,
      bytecode: `0x${c.evm.bytecode.object}`,
      deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
    };
    await writeFile(join(contractsDir, `${contractName}.json`), JSON.stringify(artifact, null, 2) + "\n");
    artifacts.push(artifact);
  }
  return artifacts;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const t0 = performance.now();
  const built = await buildContracts();
  console.log(`built ${built.map((a) => a.contractName).join(", ")} in ${Math.round(performance.now() - t0)} ms`);
}
