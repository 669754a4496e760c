// In-sandbox agent: serves file operations and port relays on a unix socket, running as the sandbox user inside
// the sandbox's namespaces (so permissions, symlinks and 127.0.0.1 resolve exactly as for the user's own processes).
// Plain JavaScript on purpose: it runs on the sandbox's node, without the emulator's toolchain.
import fs from "node:fs";
import fsp from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { pipeline } from "node:stream/promises";

const SOCKET = process.argv[2] ?? "/run/tollgate/sock/user/agent.sock";
const HOME = process.env.HOME || "/home/ubuntu";

class AgentError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const abs = (p) => {
  if (typeof p !== "string" || p === "") throw new AgentError(400, "invalid_request", "path is required");
  return path.resolve(HOME, p);
};
const parseMode = (m, fallback) =>
  m === undefined || m === null || m === "" ? fallback : typeof m === "number" ? m : parseInt(String(m), 8);
const names = { uid: new Map(), gid: new Map() };
for (const [file, map] of [
  ["/etc/passwd", names.uid],
  ["/etc/group", names.gid],
]) {
  try {
    for (const line of fs.readFileSync(file, "utf8").split("\n")) {
      const f = line.split(":");
      if (f.length > 2) map.set(Number(f[2]), f[0]);
    }
  } catch {}
}
/** `ls -l`'s mode column: the type character, then rwx triplets with setuid/setgid/sticky as s/S, s/S, t/T. */
const TYPE_CHAR = { 0o140000: "s", 0o120000: "l", 0o100000: "-", 0o060000: "b", 0o040000: "d", 0o020000: "c", 0o010000: "p" };
const perms = (mode) => {
  const chars = "rwxrwxrwx";
  let s = TYPE_CHAR[mode & 0o170000] ?? "?";
  for (let i = 0; i < 9; i++) s += mode & (1 << (8 - i)) ? chars[i] : "-";
  const special = (bit, at, set, unset) => {
    if (!(mode & bit)) return;
    s = s.slice(0, at) + (s[at] === "x" ? set : unset) + s.slice(at + 1);
  };
  special(0o4000, 3, "s", "S");
  special(0o2000, 6, "s", "S");
  special(0o1000, 9, "t", "T");
  return s;
};

async function info(p) {
  const st = await fsp.lstat(p);
  const type = st.isDirectory() ? "dir" : st.isSymbolicLink() ? "symlink" : "file";
  const out = {
    path: p,
    name: path.basename(p) || "/",
    type,
    size: st.size,
    mode: st.mode & 0o7777,
    permissions: perms(st.mode),
    owner: names.uid.get(st.uid) ?? String(st.uid),
    group: names.gid.get(st.gid) ?? String(st.gid),
    modifiedTime: Math.floor(st.mtimeMs),
  };
  if (type === "symlink") out.symlinkTarget = await symlinkTarget(p);
  return out;
}

/**
 * A link's target as the service reports it: absolute, resolved against the link's own directory (`..` in
 * /a/b/loop is /a); a link that does not resolve (missing target, a loop) keeps its literal text.
 */
async function symlinkTarget(p) {
  const raw = await fsp.readlink(p).catch(() => undefined);
  if (raw === undefined) return undefined;
  const resolves = await fsp.stat(p).then(
    () => true,
    () => false,
  );
  return resolves ? path.resolve(path.dirname(p), raw) : raw;
}

async function walk(dir, depth, out) {
  const entries = await fsp.readdir(dir);
  entries.sort();
  for (const name of entries) {
    const p = path.join(dir, name);
    const i = await info(p).catch(() => null);
    if (!i) continue;
    out.push(i);
    if (i.type === "dir" && depth > 1) await walk(p, depth - 1, out).catch(() => {});
  }
}

async function writeOne(f) {
  const p = abs(f.path);
  const data = Buffer.from(f.data ?? "", f.encoding === "base64" ? "base64" : "utf8");
  await fsp.mkdir(path.dirname(p), { recursive: true });
  await fsp.writeFile(p, data, { flag: f.append ? "a" : "w", mode: parseMode(f.mode, 0o644) });
  // `mode: null` (how the Python SDK sends "unset") leaves an existing file's mode alone, like an absent one.
  if (f.mode !== undefined && f.mode !== null && f.mode !== "") await fsp.chmod(p, parseMode(f.mode, 0o644));
  return { path: p, name: path.basename(p), type: "file" };
}

async function recurse(p, recursive, fn) {
  await fn(p);
  if (!recursive) return;
  const st = await fsp.lstat(p);
  if (!st.isDirectory()) return;
  for (const name of await fsp.readdir(p)) await recurse(path.join(p, name), true, fn);
}

const ops = {
  ping: async () => ({ pong: true, uid: process.getuid() }),
  stat: async (r) => ({ file: await info(abs(r.path)) }),
  list: async (r) => {
    const depth = Math.max(1, Number(r.depth ?? 1) | 0);
    const st = await fsp.stat(abs(r.path));
    if (!st.isDirectory()) throw new AgentError(400, "not_a_directory", `${abs(r.path)}: not a directory`);
    // A symlinked directory (or one below a symlinked parent) lists under its real path; the walk never descends
    // into a symlink, so loops are listed once, as links.
    const p = await fsp.realpath(abs(r.path));
    const entries = [];
    await walk(p, depth, entries);
    return { path: p, depth, entries };
  },
  read: async (r) => {
    const p = abs(r.path);
    const st = await fsp.stat(p);
    if (st.isDirectory()) throw new AgentError(400, "is_a_directory", `${p}: is a directory`);
    const offset = Math.max(0, Number(r.offset ?? 0));
    const limit = 64 * 1024 * 1024;
    const length = r.length === undefined || r.length === null ? Math.min(st.size - offset, limit) : Math.min(Number(r.length), limit);
    const fh = await fsp.open(p, "r");
    try {
      const buf = Buffer.alloc(Math.max(0, length));
      const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
      const encoding = r.encoding === "base64" ? "base64" : "utf8";
      return { content: buf.subarray(0, bytesRead).toString(encoding), encoding, bytesRead, truncated: offset + bytesRead < st.size };
    } finally {
      await fh.close();
    }
  },
  write: async (r) => ({ files: await Promise.all((Array.isArray(r.files) ? r.files : [r]).map(writeOne)) }),
  mkdir: async (r) => {
    const p = abs(r.path);
    const existed = await fsp.stat(p).then(
      (s) => s.isDirectory(),
      () => false,
    );
    if (existed) return { path: p, created: false };
    await fsp.mkdir(p, { recursive: r.parents !== false, mode: parseMode(r.mode, 0o755) });
    return { path: p, created: true };
  },
  move: async (r) => {
    const to = abs(r.to);
    await fsp.rename(abs(r.from), to);
    return { entry: await info(to) };
  },
  delete: async (r) => {
    const p = abs(r.path);
    const st = await fsp.lstat(p).catch(() => null);
    if (!st) return { path: p, deleted: false };
    if (st.isDirectory() && !r.recursive) await fsp.rmdir(p);
    else await fsp.rm(p, { recursive: Boolean(r.recursive), force: true });
    return { path: p, deleted: true };
  },
  copy: async (r) => {
    const from = abs(r.from);
    const to = abs(r.to);
    const st = await fsp.lstat(from);
    if (st.isDirectory() && !r.recursive) throw new AgentError(400, "is_a_directory", `${from}: is a directory (use recursive)`);
    await fsp.cp(from, to, {
      recursive: Boolean(r.recursive),
      force: r.overwrite !== false,
      errorOnExist: r.overwrite === false,
      verbatimSymlinks: true,
    });
    return { entry: await info(to) };
  },
  chmod: async (r) => {
    const mode = parseMode(r.mode, NaN);
    if (Number.isNaN(mode)) throw new AgentError(400, "invalid_request", "mode must be an octal string such as 755");
    await recurse(abs(r.path), r.recursive, (p) => fsp.chmod(p, mode));
    return { success: true };
  },
  chown: async (r) => {
    await recurse(abs(r.path), r.recursive, (p) => fsp.lchown(p, r.uid ?? -1, r.gid ?? -1));
    return { success: true };
  },
  checkDir: async (r) => {
    const p = abs(r.path);
    const st = await fsp.stat(p);
    if (!st.isDirectory()) throw new AgentError(400, "not_a_directory", `${p}: not a directory`);
    return { path: p };
  },
};

/** Directories one recursive watch follows at most (each is an inotify watch). */
const MAX_WATCHED_DIRS = 4096;

/**
 * Watches `root` (and, when `recursive`, every directory under it) with one non-recursive fs.watch per directory.
 * Node 20's own recursive watch on Linux misses events in subdirectories (a file created and written there may show
 * its create but not its write); here a directory that appears is watched as soon as it is seen, and what it already
 * holds by then is reported (create, and write for a file with content) so nothing written before the watch
 * attached goes unsaid. Events: create, write, remove, rename (a name seen before that reappears).
 */
function watchTree(root, recursive, emit) {
  const watchers = new Map();
  const seen = new Set();
  let onError = () => {};
  let closed = false;
  const report = (full, op) => {
    if (op === "remove") seen.delete(full);
    else seen.add(full);
    emit(full, op);
  };
  // Each event is looked at as it arrives (a synchronous lstat): a new file's rename-then-change pair is then reported
  // in its order, create before write (two lstat callbacks could come back the other way round).
  const change = (dir, kind, name) => {
    if (closed) return;
    const full = path.join(dir, name);
    let st;
    try {
      st = fs.lstatSync(full);
    } catch {
      // The watched directory itself went: its parent's watch says so, not this one.
      if (!fs.existsSync(dir)) return;
      const w = watchers.get(full);
      if (w) {
        w.close();
        watchers.delete(full);
      }
      return report(full, "remove");
    }
    const existed = seen.has(full);
    report(full, kind === "rename" ? (existed ? "rename" : "create") : "write");
    if (recursive && st.isDirectory() && !watchers.has(full)) add(full, true).catch(() => {});
  };
  const add = async (dir, fresh) => {
    if (closed || watchers.has(dir) || watchers.size >= MAX_WATCHED_DIRS) return;
    let w;
    try {
      w = fs.watch(dir, (kind, name) => name && !closed && change(dir, kind, String(name)));
    } catch (e) {
      if (dir === root) throw e;
      return;
    }
    watchers.set(dir, w);
    w.on("error", (e) => {
      w.close();
      watchers.delete(dir);
      if (dir === root) onError(e);
    });
    if (!recursive && dir === root) return;
    const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const full = path.join(dir, e.name);
      // A directory that appeared while watched: what it held before its own watch attached is reported now.
      if (fresh && !seen.has(full)) {
        report(full, "create");
        if (e.isFile()) {
          const st = await fsp.lstat(full).catch(() => undefined);
          if (st && st.size > 0) report(full, "write");
        }
      }
      if (recursive && e.isDirectory()) await add(full, fresh);
    }
  };
  return {
    ready: add(root, false),
    onError(fn) {
      onError = fn;
    },
    close() {
      closed = true;
      for (const w of watchers.values()) w.close();
      watchers.clear();
    },
  };
}

const reply = (sock, obj) => sock.write(JSON.stringify(obj) + "\n");
const fail = (sock, err) => {
  const body =
    err instanceof AgentError
      ? { ok: false, status: err.status, code: err.code, message: err.message }
      : { ok: false, errno: err?.code, message: String(err?.message ?? err) };
  if (!sock.destroyed) sock.end(JSON.stringify(body) + "\n");
};

/** The ways out listening inside (op "outbound"), by address:port: a server on it (and on ::1 for 127.0.0.1). */
const outbounds = new Map();

async function stream(sock, req, rest) {
  if (req.op === "connect") {
    // Raw relay into the sandbox's own network namespace; no reply header so the caller can write immediately.
    const upstream = net.connect({ host: "127.0.0.1", port: Number(req.port) });
    upstream.on("error", () => sock.destroy());
    sock.on("error", () => upstream.destroy());
    if (rest.length) upstream.write(rest);
    sock.pipe(upstream).pipe(sock);
    return;
  }
  if (req.op === "outbound") {
    // The sandbox's way out (outbound.ts): 127.0.0.1:<port> inside, each connection handed to the host's unix socket.
    // A connection the host side closes before answering a byte (the sandbox's egress list refuses the destination, or
    // it is not listening) is reset at once, as a network policy rejecting it would: the process sees ECONNRESET, never
    // a socket that neither answers nor fails.
    const bridge = (conn) => {
      const out = net.connect({ path: String(req.socket) });
      let answered = false;
      out.on("data", () => (answered = true));
      out.on("error", () => {});
      out.on("close", () => {
        if (!answered && !conn.destroyed) conn.resetAndDestroy();
      });
      conn.on("error", () => out.destroy());
      conn.pipe(out).pipe(conn);
    };
    const at = String(req.host ?? "127.0.0.1");
    const server = net.createServer(bridge);
    await new Promise((res, rej) => (server.once("error", rej), server.listen(Number(req.port), at, res)));
    const listening = [server];
    if (at === "127.0.0.1") {
      // `localhost` may be tried as ::1 first.
      const v6 = net.createServer(bridge);
      v6.on("error", () => {});
      v6.listen(Number(req.port), "::1");
      listening.push(v6);
    }
    outbounds.set(`${at}:${req.port}`, listening);
    return void sock.end(JSON.stringify({ ok: true, body: { port: Number(req.port) } }) + "\n");
  }
  if (req.op === "outbound-close") {
    // The egress list shuts this destination now: nothing listens for it inside any more (connections are refused).
    const key = `${String(req.host ?? "127.0.0.1")}:${req.port}`;
    for (const s of outbounds.get(key) ?? []) s.close();
    outbounds.delete(key);
    return void sock.end(JSON.stringify({ ok: true, body: { port: Number(req.port) } }) + "\n");
  }
  if (req.op === "upload") {
    const p = abs(req.path);
    await fsp.mkdir(path.dirname(p), { recursive: true });
    const out = fs.createWriteStream(p, { flags: "w" });
    await new Promise((res, rej) => (out.once("open", res), out.once("error", rej)));
    if (rest.length) out.write(rest);
    await pipeline(sock, out, { end: true });
    return (reply(sock, { ok: true, body: { path: p, bytesWritten: out.bytesWritten } }), sock.end());
  }
  if (req.op === "download") {
    const p = abs(req.path);
    const st = await fsp.stat(p);
    if (st.isDirectory()) throw new AgentError(400, "is_a_directory", `${p}: is a directory`);
    const input = fs.createReadStream(p);
    await new Promise((res, rej) => (input.once("open", res), input.once("error", rej)));
    reply(sock, { ok: true, body: { path: p, size: st.size } });
    return pipeline(input, sock);
  }
  if (req.op === "watch") {
    await ops.checkDir(req);
    // Watched at its real path, as listed: events name the target's files (the SDK makes names relative to it).
    const p = await fsp.realpath(abs(req.path));
    const tree = watchTree(p, Boolean(req.recursive), (full, op) => {
      if (!sock.destroyed) sock.write(JSON.stringify({ path: full, op, timestamp: Date.now() }) + "\n");
    });
    await tree.ready;
    reply(sock, { ok: true, body: { path: p } });
    tree.onError((e) => fail(sock, e));
    sock.on("close", () => tree.close());
    sock.on("error", () => tree.close());
    return;
  }
  const fn = ops[req.op];
  if (!fn) throw new AgentError(400, "invalid_request", `unknown agent op ${req.op}`);
  sock.end(JSON.stringify({ ok: true, body: await fn(req) }) + "\n");
}

const server = net.createServer({ allowHalfOpen: true }, (sock) => {
  let head = Buffer.alloc(0);
  const onData = (chunk) => {
    head = Buffer.concat([head, chunk]);
    const nl = head.indexOf(10);
    if (nl < 0) return;
    sock.off("data", onData);
    sock.pause();
    let req;
    try {
      req = JSON.parse(head.subarray(0, nl).toString("utf8"));
    } catch {
      return fail(sock, new AgentError(400, "invalid_request", "bad agent request"));
    }
    stream(sock, req, head.subarray(nl + 1)).catch((err) => fail(sock, err));
  };
  sock.on("data", onData);
  sock.on("error", () => {});
});
try {
  fs.unlinkSync(SOCKET);
} catch {}
server.listen(SOCKET, () => process.stdout.write("ready\n"));
// The emulator holds our stdin; when it goes away, so do we.
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
