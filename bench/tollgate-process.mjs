// Tollgate as it ships, for bench/proxy.ts: the compiled gateway (dist/, `npm run build`) in plain Node, with no TypeScript
// loader in the process (tsx's transform would add its own helpers to every function the gateway makes per request).
// Its log lines go to stdout, as in production. Config and secrets come as JSON in TOLLGATE_CHILD_CONFIG / TOLLGATE_CHILD_SECRETS; prints `READY <port>` when listening.
import { parseConfig } from "../dist/config/load.js";
import { startNodeGateway } from "../dist/src/host/node.js";

const config = parseConfig(JSON.parse(process.env.TOLLGATE_CHILD_CONFIG ?? "{}"));
const secrets = JSON.parse(process.env.TOLLGATE_CHILD_SECRETS ?? "{}");
const gw = await startNodeGateway({ config, secrets });
process.stdout.write(`READY ${gw.port}\n`);
const stop = () => void gw.close().then(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
