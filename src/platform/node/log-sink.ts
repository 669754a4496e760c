// The Node entry's log destination: stdout, buffered. A synchronous write per line (what console.log does on a pipe,
// the way a container's stdout is read) cost ~70 µs a request with the access log on, most of it waking the reader;
// sonic-boom (pino's destination) gathers lines and writes them in batches off the request path, at least every
// FLUSH_MS, and synchronously at exit. Past MAX_BUFFERED bytes a stuck reader costs dropped lines, counted, never memory.
import SonicBoom from "sonic-boom";
import type { LogSink } from "../../log.js";

const FLUSH_MS = 100;
const MIN_BATCH = 32 * 1024;
const MAX_WRITE = 64 * 1024;
const MAX_BUFFERED = 16 * 1024 * 1024;

let stdout: { boom: SonicBoom; dropped: number; toldAt: number } | undefined;

/** One buffered writer for the process's stdout, shared by every gateway in it (lines stay in order). */
function shared() {
  if (stdout) return stdout;
  const boom = new SonicBoom({
    fd: 1,
    minLength: MIN_BATCH,
    maxWrite: MAX_WRITE,
    maxLength: MAX_BUFFERED,
    periodicFlush: FLUSH_MS,
    sync: false,
  });
  const s = { boom, dropped: 0, toldAt: 0 };
  // Said on stderr, at most once a minute: the log's reader is stuck and lines are being lost.
  boom.on("drop", () => {
    s.dropped++;
    if (Date.now() - s.toldAt < 60_000) return;
    s.toldAt = Date.now();
    process.stderr.write(`tollgate: stdout is not being read; ${s.dropped} log lines dropped so far\n`);
  });
  // A reader that went away (EPIPE) must not take the gateway down with an unhandled 'error'.
  boom.on("error", () => {});
  process.once("exit", () => flushStdoutLog());
  stdout = s;
  return s;
}

/** The sink for a gateway's log lines: stdout, batched. */
export function stdoutLogSink(): LogSink {
  const s = shared();
  return (line) => {
    s.boom.write(`${line}\n`);
  };
}

/** Writes what is buffered now, synchronously (at exit, on close and drain). */
export function flushStdoutLog(): void {
  if (!stdout) return;
  try {
    stdout.boom.flushSync();
  } catch {
    /* a full or closed pipe at exit: what is left is lost, as with any writer */
  }
}
