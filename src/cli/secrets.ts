// `tollgate secrets put|list|get|rm`: a tenant's secrets (docs/secrets-for-agents.md) from a terminal, through the
// gateway's API: with --tenant T the admin rows (`/_tollgate/admin/secrets/T/NAME`, a key with the admin scope), without
// it the key's own tenant's (`/_tollgate/secrets/NAME`, a tenant's own key). The value is read from stdin, a hidden
// prompt or --value-file, never from an argument (shell history, `ps`), and never printed: the API answers only rules.
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { AdminCliError, columns } from "./admin.js";

const USAGE = `tollgate secrets put NAME --host HOST[:PORT] [--host …] [--method GET] [--path /v1/] [--header NAME]
                        [--format "Bearer {}"] [--sandboxes all|on-request] [--image NAME] [--snapshot NAME]
                        [--value-file FILE] [--tenant ID]
                        the value from stdin (or a hidden prompt, or --value-file), never an argument
tollgate secrets list [--tenant ID] [--json]     name, hosts, methods, paths, header, updated, last used (never a value)
tollgate secrets get NAME [--tenant ID]          one secret's rules and last use, as JSON
tollgate secrets rm NAME [--tenant ID]           delete it: its placeholders are refused fleet-wide from now on
  --gateway URL --admin-key KEY (or TOLLGATE_GATEWAY, TOLLGATE_ADMIN_KEY): with --tenant, a key with the admin scope;
  without, a tenant's own key (its own secrets)`;

/** A secret as the API answers it (src/identity/tenant-secrets.ts, SecretView): never a value. */
interface SecretView {
  name: string;
  hosts: string[];
  methods?: string[];
  paths?: string[];
  header: string;
  format: string;
  sandboxes: string;
  images?: string[];
  snapshots?: string[];
  createdAt: string;
  updatedAt: string;
  version: number;
  lastUsedAt: string | null;
}

interface Call {
  gateway: string;
  key: string;
  tenant?: string;
}

/** The API's answer to a refused write: each field with what is wrong with it (src/operators/http/admin/validate.ts). */
type Refusal = { status: number; code?: string; message?: string; fields?: Array<{ field: string; problem: string }> };

class Refused extends Error {
  constructor(readonly refusal: Refusal) {
    super(refusal.message ?? `status ${refusal.status}`);
  }
}

const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

function callOf(values: { gateway?: string; "admin-key"?: string; tenant?: string }): Call {
  const gateway = values.gateway ?? process.env.TOLLGATE_GATEWAY;
  const key = values["admin-key"] ?? process.env.TOLLGATE_ADMIN_KEY;
  if (!gateway) throw new AdminCliError("--gateway URL (or TOLLGATE_GATEWAY): the running gateway to manage");
  if (!key)
    throw new AdminCliError(
      "--admin-key KEY (or TOLLGATE_ADMIN_KEY): a key with the admin scope (with --tenant), or a tenant's own key (its own secrets)",
    );
  return { gateway: gateway.replace(/\/+$/, ""), key, ...(values.tenant ? { tenant: values.tenant } : {}) };
}

/** The secrets' path: the admin row for --tenant, the key's own tenant's otherwise. */
const pathOf = (call: Call, name?: string) =>
  (call.tenant ? `/_tollgate/admin/secrets/${encodeURIComponent(call.tenant)}` : "/_tollgate/secrets") +
  (name ? `/${encodeURIComponent(name)}` : "");

async function request<T>(call: Call, method: string, path: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(`${call.gateway}${path}`, {
      method,
      headers: { "x-api-key": call.key, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new AdminCliError(`cannot reach ${call.gateway}: ${(err as Error).message} (is the gateway running? check --gateway)`);
  }
  const text = await res.text();
  let json: Record<string, unknown>;
  try {
    json = text ? JSON.parse(text) : {};
  } catch {
    throw new AdminCliError(`${method} ${path}: ${res.status}, not JSON (is ${call.gateway} a Tollgate gateway?)`);
  }
  if (!res.ok) throw new Refused({ status: res.status, ...(json as Omit<Refusal, "status">) });
  return json as T;
}

/** A refusal said in the CLI's terms: the flag at fault, and what to do next. Never holds the value. */
function explain(
  err: unknown,
  call: Call,
  name: string | undefined,
  input?: { hosts: string[]; methods?: string[]; paths?: string[]; images?: string[]; snapshots?: string[] },
): Error {
  if (!(err instanceof Refused)) return err as Error;
  const r = err.refusal;
  const whose = call.tenant ? `tenant "${call.tenant}"` : "this key's tenant";
  if (r.status === 401)
    return new AdminCliError(`the gateway refused the key (401 ${r.code ?? ""}): check --admin-key (or TOLLGATE_ADMIN_KEY)`);
  if (r.status === 403)
    return new AdminCliError(
      call.tenant
        ? `the key may not manage other tenants' secrets (403 ${r.code ?? ""}): --tenant needs a key with the admin scope; a tenant's own key manages its own secrets without --tenant`
        : `the key may not manage secrets (403 ${r.code ?? ""}: ${r.message ?? ""}): use a tenant's own key (not a keyless token), or --tenant ID with an admin key`,
    );
  if (r.status === 404) {
    if (call.tenant && /tenant/i.test(r.message ?? ""))
      return new AdminCliError(`--tenant ${call.tenant}: no such tenant (\`tollgate tenants list\` names them)`);
    if (name)
      return new AdminCliError(
        `${name}: ${whose} has no secret by that name (\`tollgate secrets list${call.tenant ? ` --tenant ${call.tenant}` : ""}\` lists them)`,
      );
  }
  if (r.status === 400 && r.fields?.length) {
    const flag = (field: string): string => {
      const [head, index] = field.split(".");
      const at = index === undefined ? undefined : Number(index);
      const given = (list?: string[]) => (at !== undefined && list?.[at] !== undefined ? ` "${list[at]}"` : "");
      switch (head) {
        case "hosts":
          return `--host${given(input?.hosts)}`;
        case "methods":
          return `--method${given(input?.methods)}`;
        case "paths":
          return `--path${given(input?.paths)}`;
        case "header":
          return "--header";
        case "format":
          return "--format";
        case "sandboxes":
          return "--sandboxes";
        case "images":
          return `--image${given(input?.images)}`;
        case "snapshots":
          return `--snapshot${given(input?.snapshots)}`;
        case "value":
          return "the value (stdin or --value-file)";
        default:
          return field;
      }
    };
    return new AdminCliError(
      `${r.fields.map((f) => `${flag(f.field)}: ${f.problem}`).join("\n")}\nNothing was written; correct ${r.fields.length > 1 ? "these" : "it"} and run the command again.`,
    );
  }
  return new AdminCliError(`${r.status} ${r.code ?? ""}: ${r.message ?? ""}`);
}

/** Reads what a terminal types without echoing it, up to Enter (Ctrl-C cancels). */
function promptHidden(question: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(question);
  stdin.setRawMode(true);
  stdin.setEncoding("utf8");
  stdin.resume();
  return new Promise((resolve, reject) => {
    let typed = "";
    const finish = () => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === "\r" || ch === "\n") return void (finish(), resolve(typed));
        if (ch === "\u0003") return void (finish(), reject(new AdminCliError("cancelled: nothing was written")));
        typed = ch === "\u007f" || ch === "\b" ? typed.slice(0, -1) : typed + ch;
      }
    };
    stdin.on("data", onData);
  });
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** The value: --value-file FILE ("-": stdin), piped stdin, or a hidden prompt on a terminal; one final newline dropped. */
async function readValue(file: string | undefined, name: string): Promise<string> {
  let raw: string;
  if (file && file !== "-") {
    try {
      raw = await readFile(file, "utf8");
    } catch (err) {
      throw new AdminCliError(`--value-file ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  } else if (!file && process.stdin.isTTY) raw = await promptHidden(`Value of ${name} (not shown): `);
  else raw = await readStdin();
  const value = raw.replace(/\r?\n$/, "");
  if (!value)
    throw new AdminCliError(
      `the value of ${name} is empty: pipe it on stdin (\`tollgate secrets put ${name} --host … < file\`) or name a file with --value-file FILE`,
    );
  return value;
}

const many = (v: string[] | undefined) =>
  (v ?? [])
    .flatMap((s) => s.split(","))
    .map((s) => s.trim())
    .filter(Boolean);

const stamp = (iso: string | null) => (iso ? iso.replace(/\.\d+Z$/, "Z") : "never");

/** One line about a secret's rules: where it goes and how it is written (never its value). */
const rulesLine = (s: SecretView) =>
  `hosts ${s.hosts.join(", ")}; methods ${s.methods?.join(", ") ?? "any"}; paths ${s.paths?.join(", ") ?? "any"}; ` +
  `header ${s.header}: ${s.format}; sandboxes ${s.sandboxes}` +
  (s.images?.length ? `; images ${s.images.join(", ")}` : "") +
  (s.snapshots?.length ? `; snapshots ${s.snapshots.join(", ")}` : "");

export async function cmdSecrets(sub: string | undefined, args: string[]): Promise<void> {
  // Refused before anything is parsed: a value given as an argument is already in the shell's history and in `ps`.
  if (args.some((a) => a === "--value" || a.startsWith("--value="))) {
    throw new AdminCliError(
      "--value: a secret's value is never taken from the command line (it would stay in the shell's history and show in `ps`); pipe it on stdin, type it at the prompt, or name a file with --value-file FILE",
    );
  }
  if (!sub || ["help", "--help", "-h"].includes(sub) || args.includes("--help") || args.includes("-h"))
    return void process.stdout.write(`${USAGE}\n`);
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      gateway: { type: "string" },
      "admin-key": { type: "string" },
      tenant: { type: "string" },
      json: { type: "boolean" },
      host: { type: "string", multiple: true },
      method: { type: "string", multiple: true },
      path: { type: "string", multiple: true },
      header: { type: "string" },
      format: { type: "string" },
      sandboxes: { type: "string" },
      image: { type: "string", multiple: true },
      snapshot: { type: "string", multiple: true },
      "value-file": { type: "string" },
    },
  });
  const name = positionals[0];
  const needName = () => {
    if (!name) throw new AdminCliError(`tollgate secrets ${sub} NAME: name the secret (an environment variable's name)`);
    if (!SECRET_NAME.test(name))
      throw new AdminCliError(
        `${name}: a secret's name is an environment variable's (letters, digits and _, not starting with a digit, at most 64)`,
      );
    return name;
  };
  switch (sub) {
    case "put": {
      const n = needName();
      const hosts = many(values.host);
      if (!hosts.length)
        throw new AdminCliError(
          `--host HOST[:PORT]: name at least one host ${n} may be sent to (repeat --host for more); nothing was written`,
        );
      const methods = values.method ? many(values.method).map((m) => m.toUpperCase()) : undefined;
      const paths = values.path ? many(values.path) : undefined;
      const images = values.image ? many(values.image) : undefined;
      const snapshots = values.snapshot ? many(values.snapshot) : undefined;
      const call = callOf(values);
      const value = await readValue(values["value-file"], n);
      const body = {
        value,
        hosts,
        ...(methods ? { methods } : {}),
        ...(paths ? { paths } : {}),
        ...(values.header !== undefined ? { header: values.header } : {}),
        ...(values.format !== undefined ? { format: values.format } : {}),
        ...(values.sandboxes !== undefined ? { sandboxes: values.sandboxes } : {}),
        ...(images ? { images } : {}),
        ...(snapshots ? { snapshots } : {}),
      };
      const view = await request<SecretView>(call, "PUT", pathOf(call, n), body).catch((e) => {
        throw explain(e, call, n, { hosts, methods, paths, images, snapshots });
      });
      if (values.json) return void process.stdout.write(JSON.stringify(view, null, 2) + "\n");
      process.stdout.write(
        `Secret ${view.name} ${view.version === 1 ? "created" : "replaced"}${call.tenant ? ` for tenant "${call.tenant}"` : ""} (version ${view.version}; the value is not shown again):\n  ${rulesLine(view)}\n`,
      );
      return;
    }
    case "list":
    case "ls": {
      const call = callOf(values);
      const r = await request<{ secrets: SecretView[] }>(call, "GET", pathOf(call)).catch((e) => {
        throw explain(e, call, undefined);
      });
      if (values.json) return void process.stdout.write(JSON.stringify(r, null, 2) + "\n");
      if (!r.secrets.length)
        return void process.stdout.write(
          `No secrets${call.tenant ? ` for tenant "${call.tenant}"` : ""}. Add one: tollgate secrets put NAME --host HOST${call.tenant ? ` --tenant ${call.tenant}` : ""} < value-file\n`,
        );
      const rows = [...r.secrets]
        .sort((a, b) => a.name.localeCompare(b.name))
        .map((s) => [
          s.name,
          s.hosts.join(","),
          s.methods?.join(",") ?? "any",
          s.paths?.join(",") ?? "any",
          s.header,
          stamp(s.updatedAt),
          stamp(s.lastUsedAt),
        ]);
      return void process.stdout.write(columns([["NAME", "HOSTS", "METHODS", "PATHS", "HEADER", "UPDATED", "LAST USED"], ...rows]));
    }
    case "get": {
      const call = callOf(values);
      const n = needName();
      const view = await request<SecretView>(call, "GET", pathOf(call, n)).catch((e) => {
        throw explain(e, call, n);
      });
      return void process.stdout.write(JSON.stringify(view, null, 2) + "\n");
    }
    case "rm":
    case "delete": {
      const call = callOf(values);
      const n = needName();
      const view = await request<SecretView>(call, "DELETE", pathOf(call, n)).catch((e) => {
        throw explain(e, call, n);
      });
      if (values.json) return void process.stdout.write(JSON.stringify(view, null, 2) + "\n");
      process.stdout.write(
        `Secret ${view.name} deleted${call.tenant ? ` from tenant "${call.tenant}"` : ""}: its placeholders are refused fleet-wide from now on.\n`,
      );
      return;
    }
    default:
      throw new AdminCliError(`unknown: tollgate secrets ${sub}\n\n${USAGE}`);
  }
}
