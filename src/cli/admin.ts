// `tollgate tenants …` and `tollgate keys … --gateway URL`: the admin API of a running gateway, from a terminal.
import { parseArgs } from "node:util";

export class AdminCliError extends Error {
  override name = "AdminCliError";
}

export const common = {
  gateway: { type: "string" },
  "admin-key": { type: "string" },
  json: { type: "boolean" },
} as const;

interface Target {
  gateway: string;
  key: string;
}

export function target(values: { gateway?: string; "admin-key"?: string }): Target {
  const gateway = values.gateway ?? process.env.TOLLGATE_GATEWAY;
  const key = values["admin-key"] ?? process.env.TOLLGATE_ADMIN_KEY;
  if (!gateway) throw new AdminCliError("--gateway URL (or TOLLGATE_GATEWAY): the running gateway to manage");
  if (!key) throw new AdminCliError("--admin-key KEY (or TOLLGATE_ADMIN_KEY): a tenant key with the admin scope");
  return { gateway: gateway.replace(/\/+$/, ""), key };
}

/** One admin API call; T is the answer's shape (src/routing/admin-schemas.ts), printed or read by the command. */
export async function api<T = Record<string, unknown>>(t: Target, method: string, path: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(`${t.gateway}/_tollgate/admin${path}`, {
      method,
      headers: { "x-api-key": t.key, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new AdminCliError(`cannot reach ${t.gateway}: ${(err as Error).message}`);
  }
  const text = await res.text();
  let json: Record<string, unknown>;
  try {
    json = text ? JSON.parse(text) : {};
  } catch {
    throw new AdminCliError(`${method} ${path}: ${res.status}, not JSON (is ${t.gateway} a Tollgate gateway?)`);
  }
  if (!res.ok) throw new AdminCliError(`${method} ${path}: ${res.status} ${json.code ?? ""}: ${json.message ?? text}`);
  return json as T;
}

/** Rows as aligned columns (a header first), two spaces apart, no trailing blanks: what a terminal reads, and `awk` too. */
export const columns = (rows: string[][]): string => {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map(
      (r) =>
        r
          .map((cell, i) => cell.padEnd(widths[i]!))
          .join("  ")
          .trimEnd() + "\n",
    )
    .join("");
};
const out = (v: unknown): void => void process.stdout.write(JSON.stringify(v, null, 2) + "\n");
const list = (s: string | undefined) =>
  s === undefined
    ? undefined
    : s
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean);
const int = (name: string, s: string | undefined) => {
  if (s === undefined) return undefined;
  const n = Number(s);
  if (!Number.isInteger(n) || n < 0) throw new AdminCliError(`--${name}: expected a whole number, got "${s}"`);
  return n;
};

/** Settings flags shared by `tenants create` and `tenants update`. */
const settingFlags = {
  scopes: { type: "string" },
  daily: { type: "string" },
  monthly: { type: "string" },
  total: { type: "string" },
  "on-exhausted": { type: "string" },
  rpm: { type: "string" },
  "max-sandboxes": { type: "string" },
  "max-sessions": { type: "string" },
  set: { type: "string" },
} as const;

function settingsPatch(
  v: Record<string, string | boolean | undefined>,
  current?: { budget?: object; quotas?: object },
): Record<string, unknown> {
  const patch: Record<string, unknown> = v.set ? JSON.parse(String(v.set)) : {};
  if (v.scopes !== undefined) patch.scopes = list(String(v.scopes));
  if (v.daily !== undefined || v.monthly !== undefined || v.total !== undefined) {
    patch.budget = {
      ...(current?.budget ?? {}),
      ...(v.daily !== undefined ? { daily: v.daily } : {}),
      ...(v.monthly !== undefined ? { monthly: v.monthly } : {}),
      ...(v.total !== undefined ? { total: v.total } : {}),
    };
  }
  if (v["on-exhausted"] !== undefined) patch.onExhausted = v["on-exhausted"];
  const quotas = {
    ...(v.rpm !== undefined ? { requestsPerMinute: int("rpm", String(v.rpm)) } : {}),
    ...(v["max-sandboxes"] !== undefined ? { maxSandboxes: int("max-sandboxes", String(v["max-sandboxes"])) } : {}),
    ...(v["max-sessions"] !== undefined ? { maxSessions: int("max-sessions", String(v["max-sessions"])) } : {}),
  };
  if (Object.keys(quotas).length) patch.quotas = { ...(current?.quotas ?? {}), ...quotas };
  return patch;
}

export async function cmdTenants(sub: string | undefined, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...common, ...settingFlags, label: { type: "string" }, expires: { type: "string" }, limit: { type: "string" } },
  });
  const t = target(values);
  const id = positionals[0];
  const need = () => {
    if (!id) throw new AdminCliError(`tollgate tenants ${sub} ID`);
    return encodeURIComponent(id);
  };
  switch (sub) {
    case "list": {
      const r = await api<{ tenants: Array<{ id: string; enabled: boolean; scopes: string[]; keys: unknown[]; source: string }> }>(
        t,
        "GET",
        "/tenants",
      );
      if (values.json) return out(r);
      const rows = r.tenants.map((x) => [
        x.id,
        x.enabled ? "enabled" : "disabled",
        x.scopes.join(",") || "-",
        String(x.keys.length),
        x.source,
      ]);
      return void process.stdout.write(columns([["TENANT", "STATE", "SCOPES", "KEYS", "SOURCE"], ...rows]));
    }
    case "get":
      return out(await api(t, "GET", `/tenants/${need()}`));
    case "create": {
      const body = {
        id,
        ...settingsPatch(values),
        ...(values.label ? { keyLabel: values.label } : {}),
        ...(values.expires ? { keyExpiresAt: values.expires } : {}),
      };
      need();
      const r = await api<{ tenant: { id: string }; key: string; keyId: string }>(t, "POST", "/tenants", body);
      if (values.json) return out(r);
      process.stdout.write(
        `Tenant "${r.tenant.id}" created. Its key (shown once; only its hash is kept):\n\n  ${r.key}\n\nkey id: ${r.keyId}\n`,
      );
      return;
    }
    case "update": {
      const current = await api(t, "GET", `/tenants/${need()}`);
      return out(await api(t, "PATCH", `/tenants/${need()}`, settingsPatch(values, current)));
    }
    case "disable":
    case "enable":
      return out(await api(t, "POST", `/tenants/${need()}/${sub}`));
    case "delete":
      return out(await api(t, "DELETE", `/tenants/${need()}`));
    case "audit":
      return out(await api(t, "GET", `/audit?limit=${int("limit", values.limit) ?? 50}`));
    default:
      throw new AdminCliError("tollgate tenants list|get|create|update|disable|enable|delete|audit --gateway URL --admin-key KEY");
  }
}

/** `keys create|rotate|revoke|expire` against a running gateway (`keys create` without --gateway stays offline). */
export async function cmdKeysRemote(sub: string | undefined, args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      ...common,
      tenant: { type: "string" },
      key: { type: "string" },
      label: { type: "string" },
      expires: { type: "string" },
      grace: { type: "string" },
    },
  });
  const t = target(values);
  if (!values.tenant) throw new AdminCliError(`tollgate keys ${sub} --tenant ID …`);
  const base = `/tenants/${encodeURIComponent(values.tenant)}/keys`;
  const keyId = () => {
    if (!values.key) throw new AdminCliError(`tollgate keys ${sub} --tenant ID --key KEY_ID (the id shown by \`tollgate tenants get\`)`);
    return encodeURIComponent(values.key);
  };
  const issued = (r: { tenant: string; key: string; id: string }) =>
    values.json
      ? out(r)
      : process.stdout.write(`New key for tenant "${r.tenant}" (shown once; only its hash is kept):\n\n  ${r.key}\n\nkey id: ${r.id}\n`);
  switch (sub) {
    case "create":
      return void issued(
        await api(t, "POST", base, {
          ...(values.label ? { label: values.label } : {}),
          ...(values.expires ? { expiresAt: values.expires } : {}),
        }),
      );
    case "rotate":
      return void issued(
        await api(t, "POST", `${base}/${keyId()}/rotate`, {
          ...(values.label ? { label: values.label } : {}),
          ...(values.expires ? { expiresAt: values.expires } : {}),
          graceSeconds: int("grace", values.grace) ?? 0,
        }),
      );
    case "revoke":
      return out(await api(t, "DELETE", `${base}/${keyId()}`));
    case "expire":
      if (!values.expires) throw new AdminCliError("tollgate keys expire --tenant ID --key KEY_ID --expires ISO");
      return out(await api(t, "POST", `${base}/${keyId()}/expire`, { expiresAt: values.expires }));
    default:
      throw new AdminCliError("tollgate keys create|rotate|revoke|expire --tenant ID [--key KEY_ID] --gateway URL --admin-key KEY");
  }
}

/** `tollgate console link`: a one-time console sign-in URL for the operator key given (the key stays out of the URL). */
export async function cmdConsoleLink(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { ...common, ttl: { type: "string" } } });
  const t = target(values);
  const ttlSeconds = int("ttl", values.ttl);
  const r = await api<{ url: string; expiresAt: string }>(t, "POST", "/console-links", ttlSeconds !== undefined ? { ttlSeconds } : {});
  if (values.json) return out(r);
  process.stdout.write(`Open this link to sign in to the console (once, until ${r.expiresAt}):\n\n  ${r.url}\n`);
}
