// `npm run bench`: every benchmark, one after another (each starts and stops its own servers on 127.0.0.1).
import { spawnSync } from "node:child_process";

const BENCHES = ["paid-path.ts", "sandbox-proxy.ts", "cdp-relay.ts", "pty-relay.ts"];
const only = process.argv.slice(2);
for (const b of BENCHES.filter((x) => !only.length || only.some((o) => x.includes(o)))) {
  console.log(`\n# bench/${b}`);
  const r = spawnSync(process.execPath, ["--import", "tsx", `bench/${b}`], { stdio: "inherit" });
  if (r.status !== 0) {
    console.error(`bench/${b} failed with ${r.status ?? r.signal}`);
    process.exitCode = 1;
  }
}
