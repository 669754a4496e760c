// A Node gateway in its own process (so its memory can be measured apart from the client and the emulator).
// Config and secrets come as JSON in TOLLGATE_CHILD_CONFIG / TOLLGATE_CHILD_SECRETS; prints `READY <port>` when listening.
import { parseConfig } from "../../config/load.js";
import { startNodeGateway } from "../../src/host/node.js";

const config = parseConfig(JSON.parse(process.env.TOLLGATE_CHILD_CONFIG ?? "{}"));
const secrets = JSON.parse(process.env.TOLLGATE_CHILD_SECRETS ?? "{}");
const gw = await startNodeGateway({ config, secrets, logSink: () => {} });
process.stdout.write(`READY ${gw.port}\n`);
const stop = () => void gw.close().then(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
