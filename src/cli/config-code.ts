// `tollgate export`, `tollgate diff FILE`, `tollgate apply FILE`: config as code against a running fleet, through its
// admin API (docs/config-as-code.md). The file is TOML (or JSON) in the config file's shape; the gateway validates it
// and plans or applies it, so what the CLI shows is what the fleet will do.
import { readFile, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { parse as parseToml } from "smol-toml";
import { AdminCliError, api, common, target } from "./admin.js";

interface ItemChange {
  id: string;
  action: "create" | "update" | "delete" | "refused";
  fields?: string[];
  reason?: string;
}
interface Plan {
  inSync: boolean;
  prune: boolean;
  sections: Record<string, { changes: ItemChange[]; unchanged: number; notInFile: string[] }>;
  ignored: string[];
  applied?: boolean;
}

/** The file as an object: TOML, or JSON when it is named .json or starts with `{`; a parse error says where. */
async function readDocument(file: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new AdminCliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  try {
    return file.endsWith(".json") || text.trimStart().startsWith("{") ? JSON.parse(text) : parseToml(text);
  } catch (err) {
    const { line, column } = err as { line?: unknown; column?: unknown };
    const at = typeof line === "number" && typeof column === "number" ? `:${line}:${column}` : "";
    throw new AdminCliError(`cannot parse ${file}${at}: ${(err as Error).message.split("\n")[0]}`);
  }
}

const SIGN = { create: "+", update: "~", delete: "-", refused: "!" } as const;

/** The plan as a person reads it: one line per change, then what is left alone. */
function describePlan(plan: Plan, verb: "would" | "did"): string {
  const lines: string[] = [];
  for (const [section, s] of Object.entries(plan.sections)) {
    const item = section === "tenants" ? "tenant" : section;
    for (const c of s.changes) {
      const what =
        c.action === "update"
          ? `: ${c.fields!.join(", ")}`
          : c.action === "refused"
            ? `: refused, ${c.reason}`
            : c.action === "delete"
              ? " (not in the file; --prune)"
              : "";
      lines.push(`${SIGN[c.action]} ${item} ${c.id}${what}`);
    }
    if (s.unchanged) lines.push(`= ${s.unchanged} ${item}${s.unchanged === 1 ? "" : "s"} unchanged`);
    if (s.notInFile.length && !plan.prune)
      lines.push(
        `  ${s.notInFile.length} ${item}${s.notInFile.length === 1 ? "" : "s"} not in the file, left alone: ${s.notInFile.join(", ")}`,
      );
  }
  if (plan.ignored.length) lines.push(`  ignored (static settings, read at start): ${plan.ignored.join(", ")}`);
  const changes = Object.values(plan.sections).reduce((n, s) => n + s.changes.length, 0);
  lines.push(
    plan.inSync
      ? "In sync: nothing to change."
      : `${changes} change${changes === 1 ? "" : "s"} ${verb === "would" ? "to apply" : "applied"}.`,
  );
  return lines.join("\n") + "\n";
}

export async function cmdExport(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { ...common, out: { type: "string", short: "o" } } });
  const t = target(values);
  let res: Response;
  try {
    res = await fetch(`${t.gateway}/_tollgate/admin/config/export${values.json ? "?format=json" : ""}`, {
      headers: { "x-api-key": t.key },
    });
  } catch (err) {
    throw new AdminCliError(`cannot reach ${t.gateway}: ${(err as Error).message}`);
  }
  const text = await res.text();
  if (!res.ok) {
    let why = text;
    try {
      const j = JSON.parse(text) as { code?: string; message?: string };
      why = `${j.code ?? ""}: ${j.message ?? text}`;
    } catch {}
    throw new AdminCliError(`GET /config/export: ${res.status} ${why}`);
  }
  if (values.out) {
    await writeFile(values.out, text, { mode: 0o600 });
    process.stderr.write(`wrote ${values.out}\n`);
  } else process.stdout.write(text);
}

/** `diff` and `apply`: the file sent to the fleet's admin API; the plan printed (or its JSON with --json). */
export async function cmdPlan(verb: "diff" | "apply", args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...common, prune: { type: "boolean" }, "exit-code": { type: "boolean" } },
  });
  const file = positionals[0];
  if (!file) throw new AdminCliError(`tollgate ${verb} FILE [--prune] --gateway URL --admin-key KEY`);
  const t = target(values);
  const document = await readDocument(file);
  const plan = await api<Plan>(t, "POST", `/config/${verb}`, { document, prune: !!values.prune });
  if (values.json) process.stdout.write(JSON.stringify(plan, null, 2) + "\n");
  else process.stdout.write(describePlan(plan, verb === "diff" ? "would" : "did"));
  // --exit-code (diff): 1 when the fleet differs from the file, as `git diff --exit-code`.
  if (verb === "diff" && values["exit-code"] && !plan.inSync) process.exitCode = 1;
}
