// Runs `tollgate start --config FILE` as a real separate process (its own process group), for fleet and crash tests.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface GatewayProcess {
  url: string;
  pid: number;
  /** The config file the process was started with (a test may change it and send SIGHUP). */
  configFile: string;
  output: () => string;
  /** SIGTERM to the process group, SIGKILL after 5 s. */
  stop(): Promise<void>;
  /** SIGKILL the whole group at once (a crash). */
  kill(): Promise<void>;
  /** Sends one signal to the gateway process itself (not its group), e.g. to watch a drain. */
  signal(sig: NodeJS.Signals): void;
  /** Settles when the process has exited, with its exit code (or the signal that ended it). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `entry`: the node arguments that run the CLI (default: the TypeScript source through tsx; bin/tollgate.js: the build). */
export async function startGatewayProcess(
  config: Record<string, unknown>,
  env: Record<string, string>,
  entry: string[] = ["--import", "tsx", "src/cli/index.ts"],
): Promise<GatewayProcess> {
  const dir = await mkdtemp(join(tmpdir(), "tg-proc-"));
  const file = join(dir, "tollgate.json");
  // `start` refuses a file without [state] (docs/deploying.md#state): one that names none rehearses on memory, said out loud.
  const withState = config.state !== undefined ? config : { ...config, state: { backend: "memory", rehearsal: true } };
  await writeFile(file, JSON.stringify(withState));
  const child: ChildProcess = spawn(process.execPath, [...entry, "start", "--config", file], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exitedWith = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once("exit", (code, signal) => r({ code, signal })),
  );
  // The config file (it may hold key hashes and secrets' names) goes with the process, however it ends.
  const exited = exitedWith.then(() => rm(dir, { recursive: true, force: true }).catch(() => {}));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start:\n${out}`)), 30_000);
    const check = () => {
      const m = out.match(/listening on (http:\/\/[\d.:]+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout!.on("data", check);
    child.stderr!.on("data", check);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code}:\n${out}`));
    });
  });
  const pid = child.pid!;
  const signalGroup = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig);
    } catch {
      /* already gone */
    }
  };
  return {
    url,
    pid,
    configFile: file,
    output: () => out,
    exited: exitedWith,
    signal(sig) {
      if (child.exitCode === null && child.signalCode === null) child.kill(sig);
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      signalGroup("SIGTERM");
      const t = setTimeout(() => signalGroup("SIGKILL"), 5000);
      await exited;
      clearTimeout(t);
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      signalGroup("SIGKILL");
      await exited;
    },
  };
}
