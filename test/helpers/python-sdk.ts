// The official Python SDK's snapshot (version 1.3.0: its pydantic models; PyPI is not reachable here, so it is not
// installed) and a way to run Python scripts against it. The snapshot lives in shared/ beside the checkout
// (`../shared/reference/python-sdk`); TOLLGATE_PYTHON_SDK points elsewhere.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";

const CANDIDATES = ["../shared/reference/python-sdk", "../../shared/reference/python-sdk", "/work/shared/reference/python-sdk"];

/** The snapshot's root (it holds `hyperbrowser/models/`); a missing snapshot is an error that says where it was looked for. */
export function pythonSdkDir(): string {
  const tried = process.env.TOLLGATE_PYTHON_SDK ? [process.env.TOLLGATE_PYTHON_SDK] : CANDIDATES.map((c) => resolve(process.cwd(), c));
  const found = tried.find((d) => existsSync(join(d, "hyperbrowser/models/sandbox.py")));
  if (!found) throw new Error(`The Python SDK snapshot was not found (looked in ${tried.join(", ")}); set TOLLGATE_PYTHON_SDK`);
  return found;
}

/** Runs `python3 <script> ...args`; resolves with its stdout, rejects with its stderr named. */
export function runPython(script: string, args: string[], timeoutMs = 120_000): Promise<string> {
  return new Promise((ok, fail) => {
    execFile("python3", [script, ...args], { timeout: timeoutMs, maxBuffer: 32 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) fail(new Error(`python3 ${script} failed (${err.code ?? err.signal}): ${stderr || err.message}`));
      else ok(stdout);
    });
  });
}
