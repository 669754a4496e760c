// A real nginx (Debian's package) terminating TLS in front of the gateway, with a certificate made at test time.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

export interface NginxTls {
  /** `https://localhost:<port>`. */
  url: string;
  port: number;
  /** PEM of the self-signed certificate, for NODE_EXTRA_CA_CERTS. */
  certFile: string;
  accessLog(): Promise<string>;
  stop(): Promise<void>;
}

const run = promisify(execFile);

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/** Starts `nginx -p DIR -c nginx.conf` in the foreground (stopped by its PID), proxying https and wss to `upstream`. */
export async function startNginxTls(upstream: string): Promise<NginxTls> {
  const dir = await mkdtemp(join(tmpdir(), "tg-nginx-"));
  const certFile = join(dir, "cert.pem");
  const keyFile = join(dir, "key.pem");
  await run("openssl", [
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "1",
    "-subj",
    "/CN=localhost",
    "-keyout",
    keyFile,
    "-out",
    certFile,
    "-addext",
    "subjectAltName=DNS:localhost,IP:127.0.0.1",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
  ]);
  const port = await freePort();
  const conf = `
daemon off;
master_process on;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
${process.getuid?.() === 0 ? "user root;" : ""}
events { worker_connections 256; }
http {
  access_log ${dir}/access.log;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  map $http_upgrade $connection_upgrade { default upgrade; '' close; }
  server {
    listen 127.0.0.1:${port} ssl;
    server_name localhost;
    ssl_certificate ${certFile};
    ssl_certificate_key ${keyFile};
    client_max_body_size 64m;
    location / {
      proxy_pass ${upstream};
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 300s;
    }
  }
}
`;
  await writeFile(join(dir, "nginx.conf"), conf);
  const nginxBin = existsSync("/usr/sbin/nginx") ? "/usr/sbin/nginx" : "nginx";
  const child: ChildProcess = spawn(nginxBin, ["-p", dir, "-c", join(dir, "nginx.conf"), "-e", join(dir, "error.log")], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  // Ready once the port accepts connections (bounded: 10 s).
  const { connect } = await import("node:net");
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${out}${await readFile(join(dir, "error.log"), "utf8").catch(() => "")}`);
    const ok = await new Promise<boolean>((r) => {
      const s = connect(port, "127.0.0.1", () => (s.destroy(), r(true)));
      s.once("error", () => r(false));
    });
    if (ok) break;
    if (Date.now() > deadline) throw new Error(`nginx did not listen on ${port}: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `https://localhost:${port}`,
    port,
    certFile,
    accessLog: () => readFile(join(dir, "access.log"), "utf8").catch(() => ""),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const t = setTimeout(() => child.kill("SIGKILL"), 5000);
        await exited;
        clearTimeout(t);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
