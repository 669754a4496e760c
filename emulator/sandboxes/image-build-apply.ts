// The step that turns a team image build's verified inputs into an image root: a Docker image's layers unpacked in
// order, or a Dockerfile applied the way the emulator can; either way, the image's init (env, argv, working directory)
// merged with the build's own.
import { createHash } from "node:crypto";
import { cp, mkdir, readFile, stat } from "node:fs/promises";
import { join, posix } from "node:path";
import { type BuildRecord, isObject, run } from "./image-build-inputs.js";

/**
 * A Docker image's layers unpacked in order over the image root (whiteouts are not applied: the emulator's images are
 * file overlays on the host's userland), and its config's Env, Entrypoint+Cmd and WorkingDir as the image's init
 * (the build's own imageInit wins field by field).
 */
export async function unpackDockerImage(
  record: Pick<BuildRecord, "manifest" | "blobs" | "imageInit">,
  blobPath: (sha256: string) => string,
  skeleton: string,
  excludes: string[],
): Promise<Record<string, unknown> | null> {
  const config = record.manifest!.config as { sha256: string; dataBase64: string };
  const bytes = Buffer.from(config.dataBase64, "base64");
  if (createHash("sha256").update(bytes).digest("hex") !== config.sha256)
    throw new Error("dockerImageManifest.config.dataBase64 does not hash to config.sha256");
  const doc = JSON.parse(bytes.toString("utf8")) as { config?: Record<string, any> };
  for (const b of record.blobs)
    await run("/usr/bin/tar", ["-xf", blobPath(b.sha256), "-C", skeleton, "--anchored", ...excludes, "--no-overwrite-dir"], {
      timeout: 120_000,
    });
  const c = doc.config ?? {};
  const env = Object.fromEntries(
    (Array.isArray(c.Env) ? c.Env : [])
      .map((e: unknown) => String(e).split(/=(.*)/s))
      .filter(([k]: string[]) => k && k !== "PATH" && k !== "HOME"),
  ) as Record<string, string>;
  const argv = [...(Array.isArray(c.Entrypoint) ? c.Entrypoint : []), ...(Array.isArray(c.Cmd) ? c.Cmd : [])].map(String);
  return mergeInit({ env, args: argv, workingDir: typeof c.WorkingDir === "string" ? c.WorkingDir : undefined }, record.imageInit);
}

/**
 * A Dockerfile applied the way the emulator can: COPY/ADD from the context into the image root, WORKDIR (made),
 * ENV, USER, CMD and ENTRYPOINT. FROM is read as the emulator's Debian userland and RUN is not executed (there is no
 * build VM); both are listed in the build's metadata (`ignoredInstructions`).
 */
export async function applyDockerfile(
  record: Pick<BuildRecord, "metadata" | "imageInit">,
  context: string,
  skeleton: string,
): Promise<Record<string, unknown> | null> {
  const rel = String(record.metadata.dockerfilePath ?? "Dockerfile");
  const inside = (base: string, p: string) => {
    const clean = posix.normalize(`/${p}`).slice(1);
    return join(base, clean);
  };
  const text = await readFile(inside(context, rel), "utf8").catch(() => {
    throw new Error(`Dockerfile ${rel} is not in the build context`);
  });
  const lines = text.replace(/\\\r?\n/g, " ").split(/\r?\n/);
  let workdir = "/";
  const env: Record<string, string> = {};
  let entrypoint: string[] = [];
  let cmd: string[] = [];
  const ignored: string[] = [];
  const words = (rest: string): string[] => {
    const t = rest.trim();
    if (t.startsWith("[")) return (JSON.parse(t) as unknown[]).map(String);
    return ["/bin/sh", "-c", t];
  };
  for (const raw of lines) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const m = /^(\w+)\s+(.*)$/s.exec(line);
    if (!m) continue;
    const op = m[1]!.toUpperCase();
    const rest = m[2]!;
    if (op === "COPY" || op === "ADD") {
      const parts = (rest.trim().startsWith("[") ? (JSON.parse(rest) as string[]) : rest.trim().split(/\s+/)).filter(
        (p) => !p.startsWith("--"),
      );
      const dest = parts.pop()!;
      const destAbs = posix.isAbsolute(dest) ? dest : posix.join(workdir, dest);
      for (const src of parts) {
        const from = inside(context, src);
        const info = await stat(from);
        const to = inside(
          skeleton,
          destAbs.endsWith("/") || parts.length > 1 || info.isDirectory()
            ? posix.join(destAbs, info.isDirectory() ? "" : posix.basename(src))
            : destAbs,
        );
        await mkdir(info.isDirectory() ? to : join(to, ".."), { recursive: true });
        await cp(from, to, { recursive: true, verbatimSymlinks: true });
      }
    } else if (op === "WORKDIR") {
      workdir = posix.isAbsolute(rest.trim()) ? rest.trim() : posix.join(workdir, rest.trim());
      await mkdir(inside(skeleton, workdir), { recursive: true });
    } else if (op === "ENV") {
      const kv = /^(\S+?)(?:=|\s+)(.*)$/s.exec(rest.trim());
      if (kv) env[kv[1]!] = kv[2]!.replace(/^"(.*)"$/s, "$1");
    } else if (op === "CMD") cmd = words(rest);
    else if (op === "ENTRYPOINT") entrypoint = words(rest);
    else if (op === "USER") record.metadata.imageConfigUser ??= rest.trim();
    else ignored.push(op);
  }
  record.metadata.ignoredInstructions = ignored;
  return mergeInit({ env, args: [...entrypoint, ...cmd], workingDir: workdir === "/" ? undefined : workdir }, record.imageInit);
}

/** An image's init from what the image says (`auto`), with the build's own (`explicit`) winning field by field. */
function mergeInit(
  auto: { env: Record<string, string>; args: string[]; workingDir?: string },
  explicit: Record<string, any> | null,
): Record<string, unknown> | null {
  const env = { ...auto.env, ...(isObject(explicit?.env) ? explicit.env : {}) };
  const explicitArgs = Array.isArray(explicit?.args) && explicit.args.length > 0 ? explicit.args : undefined;
  const command = typeof explicit?.command === "string" && explicit.command ? explicit.command : undefined;
  const args = command ? undefined : (explicitArgs ?? (auto.args.length > 0 ? auto.args : undefined));
  const workingDir = (typeof explicit?.workingDir === "string" && explicit.workingDir) || auto.workingDir;
  const init = {
    ...(Object.keys(env).length > 0 ? { env } : {}),
    ...(command ? { command } : {}),
    ...(args ? { args } : {}),
    ...(workingDir ? { workingDir } : {}),
  };
  return Object.keys(init).length > 0 ? init : null;
}
