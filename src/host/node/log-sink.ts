// The Node entry's log destination: stdout, in batches, in order, never blocking the gateway on a slow reader.
//
// A synchronous write per line (console.log on a pipe, the way a container's stdout is read) cost ~70 µs a request
// with the access log on, most of it waking the reader. Lines are gathered into one string (a rope until written) and
// written a batch at a time: at MIN_BATCH characters, every FLUSH_MS, and at exit. Every write happens on this thread,
// so lines always come out in order, at exit too. (sonic-boom, used before, writes asynchronously on libuv's thread
// pool; at exit its synchronous flush wrote the rest while a batch was still in flight there, out of order, which a
// test caught under CI load.) Stdout as a pipe is reopened non-blocking (Linux, /proc/self/fd/1): a write the reader
// has no room for comes back short or EAGAIN and the rest waits, up to MAX_BUFFERED bytes; past that, lines are
// dropped (counted, said on stderr once a minute), never memory and never a stalled event loop. A file or terminal is
// written as it is; so is any stdout that cannot be reopened (a socket), which then blocks as console.log would.
import { constants, fstatSync, openSync, writeSync } from "node:fs";
import type { LogSink } from "../../log.js";

const FLUSH_MS = 100;
const MIN_BATCH = 32 * 1024;
const MAX_BUFFERED = 16 * 1024 * 1024;
/** How long the exit flush waits for a reader with no room before giving the rest up. */
const EXIT_WAIT_MS = 2_000;

interface Stdout {
  fd: number;
  /** Lines not written yet, each ending in "\n". */
  batch: string;
  /** Bytes the reader had no room for yet, in order (written before any later batch). */
  queue: Buffer[];
  queued: number;
  /** The reader is gone (EPIPE and the like): lines are dropped from now on. */
  closed: boolean;
  dropped: number;
  toldAt: number;
}

let stdout: Stdout | undefined;

/** fd 1, or a non-blocking descriptor of the same pipe when stdout is one. */
function stdoutFd(): number {
  try {
    if (fstatSync(1).isFIFO()) return openSync("/proc/self/fd/1", constants.O_WRONLY | constants.O_NONBLOCK);
  } catch {
    /* no /proc (not Linux): fd 1 as it is */
  }
  return 1;
}

/** Writes what it can of `buf` now: the bytes written (0 when the reader has no room). */
function tryWrite(s: Stdout, buf: Buffer): number {
  try {
    return writeSync(s.fd, buf);
  } catch (err) {
    if ((err as { code?: string }).code === "EAGAIN") return 0;
    s.closed = true; // EPIPE, EBADF…: nobody reads any more
    return buf.length;
  }
}

function countLines(text: string | Buffer): number {
  let n = 0;
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

function drop(s: Stdout, lines: number): void {
  s.dropped += lines;
  if (Date.now() - s.toldAt < 60_000) return;
  s.toldAt = Date.now();
  process.stderr.write(`tollgate: stdout is not being read; ${s.dropped} log lines dropped so far\n`);
}

/** Writes the queue, oldest first, as far as the reader takes it. */
function pump(s: Stdout): void {
  while (s.queue.length > 0) {
    const head = s.queue[0]!;
    const n = s.closed ? head.length : tryWrite(s, head);
    s.queued -= n;
    if (n < head.length) {
      s.queue[0] = head.subarray(n);
      return;
    }
    s.queue.shift();
  }
}

/** Writes what is queued, then the gathered lines. */
function writeBatch(s: Stdout): void {
  pump(s);
  if (s.batch === "") return;
  const text = s.batch;
  s.batch = "";
  if (s.closed) return;
  const buf = Buffer.from(text, "utf8");
  if (s.queue.length > 0) {
    if (s.queued + buf.length > MAX_BUFFERED) {
      drop(s, countLines(text));
      return;
    }
    s.queue.push(buf);
    s.queued += buf.length;
    return;
  }
  const n = tryWrite(s, buf);
  if (n === buf.length) return;
  const rest = buf.subarray(n);
  if (rest.length > MAX_BUFFERED) {
    drop(s, countLines(rest));
    return;
  }
  s.queue.push(rest);
  s.queued += rest.length;
}

/** One writer for the process's stdout, shared by every gateway in it (lines stay in order). */
function shared(): Stdout {
  if (stdout) return stdout;
  const s: Stdout = { fd: stdoutFd(), batch: "", queue: [], queued: 0, closed: false, dropped: 0, toldAt: 0 };
  setInterval(() => writeBatch(s), FLUSH_MS).unref();
  process.once("exit", () => flushStdoutLog());
  stdout = s;
  return s;
}

/** The sink for a gateway's log lines: stdout, batched. */
export function stdoutLogSink(): LogSink {
  const s = shared();
  return (line) => {
    s.batch += `${line}\n`;
    if (s.batch.length >= MIN_BATCH) writeBatch(s);
  };
}

/** Writes everything gathered now, waiting up to EXIT_WAIT_MS for a reader with no room (at exit, close and drain). */
export function flushStdoutLog(): void {
  const s = stdout;
  if (!s) return;
  writeBatch(s);
  const deadline = Date.now() + EXIT_WAIT_MS;
  const nap = new Int32Array(new SharedArrayBuffer(4));
  while (s.queue.length > 0 && !s.closed && Date.now() < deadline) {
    Atomics.wait(nap, 0, 0, 5);
    pump(s);
  }
  if (s.queue.length > 0) {
    drop(
      s,
      s.queue.reduce((n, b) => n + countLines(b), 0),
    );
    s.queue = [];
    s.queued = 0;
  }
}
