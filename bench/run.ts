// `npm run bench`: every benchmark, one after another (each starts and stops its own servers on 127.0.0.1).
import { spawnSync } from "node:child_process";

const BENCHES = [
  "paid-path.ts",
  "sandbox-proxy.ts",
  "proxy.ts",
  "cdp-relay.ts",
  "pty-relay.ts",
  "worker-cold-start.ts",
  "worker.ts",
  "state.ts",
  "ledger-cluster.ts",
];
const only = process.argv.slice(2);
// A name that is exactly a bench (`proxy` → proxy.ts) picks that one alone; otherwise any bench containing it.
const picks = (o: string) =>
  BENCHES.includes(`${o}.ts`) || BENCHES.includes(o) ? (x: string) => x === o || x === `${o}.ts` : (x: string) => x.includes(o);
for (const b of BENCHES.filter((x) => !only.length || only.some((o) => picks(o)(x)))) {
  console.log(`\n# bench/${b}`);
  const r = spawnSync(process.execPath, ["--import", "tsx", `bench/${b}`], { stdio: "inherit" });
  if (r.status !== 0) {
    console.error(`bench/${b} failed with ${r.status ?? r.signal}`);
    process.exitCode = 1;
  }
}
