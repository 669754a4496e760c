// Resident memory of another process (VmRSS from /proc/<pid>/status) and a sampler that keeps its peak.
import { readFileSync } from "node:fs";

export function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error(`no VmRSS for process ${pid}`);
  return Number(m[1]) / 1024;
}

/** Samples the RSS every `everyMs` until stopped; `stop()` answers the peak seen (at least the last sample). */
export function sampleRss(pid: number, everyMs = 20): { stop(): number } {
  let peak = rssMiB(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssMiB(pid));
    } catch {
      /* the process is gone: the test sees it elsewhere */
    }
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      try {
        peak = Math.max(peak, rssMiB(pid));
      } catch {
        /* gone */
      }
      return peak;
    },
  };
}
