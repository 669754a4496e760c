// What an audit entry of a tenant change shows in the console (issue 54): the fields that changed, each with its old and
// new value, read from the entry's before and after views; a secret's value is never shown (its field only).

/** Field names whose values are secret: named when they change, their values never shown. */
const SECRET = /hash|secret|token|password|key$/i;
const MAX_SHOWN = 8;

const shown = (v: unknown) => (v === undefined ? "—" : typeof v === "string" ? v : JSON.stringify(v));

/** The leaf fields that differ between `before` and `after` (objects walked; arrays and scalars compared whole). */
function differing(before: unknown, after: unknown, path: string, out: Array<{ path: string; from: unknown; to: unknown }>) {
  const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);
  if (isObj(before) && isObj(after)) {
    for (const k of new Set([...Object.keys(before), ...Object.keys(after)]))
      differing(before[k], after[k], path ? `${path}.${k}` : k, out);
    return;
  }
  if (JSON.stringify(before) !== JSON.stringify(after)) out.push({ path, from: before, to: after });
}

/**
 * A line saying what a tenant change changed: `budget.daily 5.00 → 7.50; scopes ["search"] → ["search","jobs"]`; keys and
 * other secrets named without values; "no change" when nothing differs.
 * @example tenantChangeDetail({ budget: { daily: "5.00" } }, { budget: { daily: "7.50" } }) // "budget.daily 5.00 → 7.50"
 */
export function tenantChangeDetail(before: unknown, after: unknown): string {
  const out: Array<{ path: string; from: unknown; to: unknown }> = [];
  differing(before, after, "", out);
  if (!out.length) return "no change";
  const parts = out.map((d) =>
    d.path === "keys" || d.path.startsWith("keys.") || SECRET.test(d.path.split(".").at(-1) ?? "")
      ? `${d.path} changed`
      : `${d.path} ${shown(d.from)} → ${shown(d.to)}`,
  );
  return parts.length > MAX_SHOWN ? `${parts.slice(0, MAX_SHOWN).join("; ")}; and ${parts.length - MAX_SHOWN} more` : parts.join("; ");
}

type SecretRules = { name?: string; hosts?: string[]; methods?: string[]; paths?: string[]; header?: string; format?: string };
const SECRET_RULES = ["hosts", "methods", "paths", "header", "format", "sandboxes"] as const;
const ruleShown = (v: unknown) => (v === undefined ? "any" : Array.isArray(v) ? v.join(", ") : String(v));

/**
 * A line saying what a secret change did (issue 57), from the entry's before and after rules (`secret.create`,
 * `secret.update`, `secret.delete`): its name, then each rule old → new (every write writes a value too).
 * Entries hold the rules only, and so does the line: a value is never in either.
 * @example secretChangeDetail("secret.update", "secret:acme/OPENAI", { hosts: ["a.com"] }, { hosts: ["a.com", "b.com"] })
 *   // "OPENAI: hosts a.com → a.com, b.com; value written"
 */
export function secretChangeDetail(action: string, target: string, before: unknown, after: unknown): string {
  const b = (before ?? {}) as SecretRules & Record<string, unknown>;
  const a = (after ?? {}) as SecretRules & Record<string, unknown>;
  const name = a.name ?? b.name ?? target.slice(target.indexOf("/") + 1);
  const rules = (r: Record<string, unknown>) =>
    `hosts ${ruleShown(r.hosts)}; methods ${ruleShown(r.methods)}; paths ${ruleShown(r.paths)}; header ${ruleShown(r.header)}: ${ruleShown(r.format)}`;
  if (action === "secret.create") return `${name} created: ${rules(a)}`;
  if (action === "secret.delete") return `${name} deleted (was ${rules(b)})`;
  const changed = SECRET_RULES.filter((k) => JSON.stringify(b[k]) !== JSON.stringify(a[k])).map(
    (k) => `${k} ${ruleShown(b[k])} → ${ruleShown(a[k])}`,
  );
  const version = b.version !== undefined && a.version !== undefined ? ` (version ${b.version} → ${a.version})` : "";
  return `${name}: ${changed.length ? changed.join("; ") : "rules unchanged"}; value written${version}`;
}
