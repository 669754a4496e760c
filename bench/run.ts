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
/** Run only when named (`npm run bench -- profile`): a bench already in the list, measured another way. */
const ON_REQUEST = ["profile.ts"];
const only = process.argv.slice(2);
// A name that is exactly a bench (`proxy` → proxy.ts) picks that one alone; otherwise any bench containing it.
const picks = (o: string) =>
  [...BENCHES, ...ON_REQUEST].includes(`${o}.ts`) || [...BENCHES, ...ON_REQUEST].includes(o)
    ? (x: string) => x === o || x === `${o}.ts`
    : (x: string) => x.includes(o);
const chosen = only.length ? [...BENCHES, ...ON_REQUEST].filter((x) => only.some((o) => picks(o)(x))) : BENCHES;
for (const b of chosen) {
  console.log(`\n# bench/${b}`);
  const r = spawnSync(process.execPath, ["--import", "tsx", `bench/${b}`], { stdio: "inherit" });
  if (r.status !== 0) {
    console.error(`bench/${b} failed with ${r.status ?? r.signal}`);
    process.exitCode = 1;
  }
}
