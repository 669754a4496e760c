// The emulator's children never outlive it: a tiny watchdog, in a session of its own, holds the read end of a pipe
// from this process. Whatever ends this process (close, exit, Ctrl-C, SIGTERM, SIGKILL of it or of its whole group,
// an OOM kill) closes the pipe; the watchdog then SIGKILLs the process groups still registered (the chain, browsers,
// sandboxes' bubblewrap), lazily unmounts what is still mounted (sandbox disks, lxcfs) and deletes the emulator's
// state directory. Node has no
// PR_SET_PDEATHSIG, and the children sit in process groups of their own (so they can be stopped whole), hence this.
import { spawn, type ChildProcess } from "node:child_process";

// POSIX sh: the lists it starts with come in its environment (so a watchdog that replaces a killed one knows them from
// birth, even if this process dies before a write reaches the pipe); each line then replaces one list ("g <pgids>",
// "m <paths>", "d <dirs>"); at EOF (this process gone) act on them.
const SCRIPT = `
g=$REAP_G; m=$REAP_M; d=$REAP_D
while IFS= read -r line; do
  case "$line" in
    "g "*) g=\${line#g } ;;
    "m "*) m=\${line#m } ;;
    "d "*) d=\${line#d } ;;
  esac
done
for p in $g; do kill -9 "-$p" 2>/dev/null; done
[ -n "$m$d" ] || exit 0
sleep 0.3
for x in $m; do umount -l "$x" 2>/dev/null; done
for x in $d; do rm -rf --one-file-system -- "$x" 2>/dev/null; done
exit 0
`;

const groups = new Set<number>();
const mounts = new Set<string>();
const dirs = new Set<string>();
let watchdog: ChildProcess | undefined;

function send(line: string): void {
  // A watchdog that died (killed by hand) is replaced, and told everything again.
  const fresh = !watchdog || watchdog.exitCode !== null || watchdog.signalCode !== null;
  if (fresh) {
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      REAP_G: [...groups].join(" "),
      REAP_M: [...mounts].join(" "),
      REAP_D: [...dirs].join(" "),
    };
    watchdog = spawn("/bin/sh", ["-c", SCRIPT], { detached: true, env, stdio: ["pipe", "ignore", "ignore"] });
    watchdog.on("error", () => {});
    watchdog.stdin!.on("error", () => {});
    // It only ends by itself once this process is gone: an exit seen from here means it was killed. Replace it.
    watchdog.once("exit", () => {
      if (groups.size + mounts.size + dirs.size > 0) setImmediate(() => send(""));
    });
    // Neither the watchdog nor its pipe keeps this process alive.
    watchdog.unref();
    (watchdog.stdin as unknown as { unref?: () => void }).unref?.();
  }
  if (!fresh) watchdog!.stdin!.write(`${line}\n`); // a fresh one was born knowing every list
}

/** Kill this process group (SIGKILL) if this process ends before `releaseGroup`. */
export function guardGroup(pgid: number | undefined): void {
  if (!pgid) return;
  groups.add(pgid);
  send(`g ${[...groups].join(" ")}`);
}

export function releaseGroup(pgid: number | undefined): void {
  if (!pgid || !groups.delete(pgid)) return;
  send(`g ${[...groups].join(" ")}`);
}

/** Unmount this path (lazily, after the groups are killed) if this process ends before `releaseMount`. No spaces. */
export function guardMount(path: string): void {
  if (/\s/.test(path)) return;
  mounts.add(path);
  send(`m ${[...mounts].join(" ")}`);
}

export function releaseMount(path: string): void {
  if (!mounts.delete(path)) return;
  send(`m ${[...mounts].join(" ")}`);
}

/** Delete this directory (after the unmounts, not crossing into other filesystems) if this process ends first. */
export function guardDir(path: string): void {
  if (/\s/.test(path)) return;
  dirs.add(path);
  send(`d ${[...dirs].join(" ")}`);
}

export function releaseDir(path: string): void {
  if (!dirs.delete(path)) return;
  send(`d ${[...dirs].join(" ")}`);
}
