// The Node entry's log destination: stdout, buffered. A synchronous write per line (what console.log does on a pipe,
// the way a container's stdout is read) cost ~70 µs a request with the access log on, most of it waking the reader.
// Lines are gathered here into one string (appending is cheap: V8 keeps a rope until the batch is handed over) and
// handed to sonic-boom (pino's destination) a batch at a time, at MIN_BATCH characters or every FLUSH_MS; sonic-boom
// writes them off the request path and synchronously at exit. Handing it line by line cost ~5 µs a line: its utf8
// mode measures the whole pending chunk (Buffer.byteLength) on every write. Past MAX_BUFFERED bytes a stuck reader
// costs dropped lines, counted, never memory.
import SonicBoom from "sonic-boom";
import type { LogSink } from "../../log.js";

const FLUSH_MS = 100;
const MIN_BATCH = 32 * 1024;
const MAX_WRITE = 64 * 1024;
const MAX_BUFFERED = 16 * 1024 * 1024;

interface Stdout {
  boom: SonicBoom;
  /** Lines not handed to sonic-boom yet, each ending in "\n". */
  batch: string;
  dropped: number;
  toldAt: number;
}

let stdout: Stdout | undefined;

function handOver(s: Stdout): void {
  if (s.batch === "") return;
  const batch = s.batch;
  s.batch = "";
  s.boom.write(batch);
}

/** One buffered writer for the process's stdout, shared by every gateway in it (lines stay in order). */
function shared(): Stdout {
  if (stdout) return stdout;
  const boom = new SonicBoom({ fd: 1, minLength: 0, maxWrite: MAX_WRITE, maxLength: MAX_BUFFERED, sync: false });
  const s: Stdout = { boom, batch: "", dropped: 0, toldAt: 0 };
  // Said on stderr, at most once a minute: the log's reader is stuck and lines are being lost.
  boom.on("drop", (data: string) => {
    for (let i = data.indexOf("\n"); i !== -1; i = data.indexOf("\n", i + 1)) s.dropped++;
    if (Date.now() - s.toldAt < 60_000) return;
    s.toldAt = Date.now();
    process.stderr.write(`tollgate: stdout is not being read; ${s.dropped} log lines dropped so far\n`);
  });
  // A reader that went away (EPIPE) must not take the gateway down with an unhandled 'error'.
  boom.on("error", () => {});
  setInterval(() => handOver(s), FLUSH_MS).unref();
  process.once("exit", () => flushStdoutLog());
  stdout = s;
  return s;
}

/** The sink for a gateway's log lines: stdout, batched. */
export function stdoutLogSink(): LogSink {
  const s = shared();
  return (line) => {
    s.batch += `${line}\n`;
    if (s.batch.length >= MIN_BATCH) handOver(s);
  };
}

/** Writes what is buffered now, synchronously (at exit, on close and drain). */
export function flushStdoutLog(): void {
  if (!stdout) return;
  try {
    handOver(stdout);
    stdout.boom.flushSync();
  } catch {
    /* a full or closed pipe at exit: what is left is lost, as with any writer */
  }
}
