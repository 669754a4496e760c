// An unpaged list answer cut down to one tenant's items, in the shape the upstream answered it: a bare array
// (`[…]`, the older extensions list) or an object holding the array (`{"extensions":[…]}`, what the Python SDK reads).

const idOf = (item: unknown) => String((item as { id?: unknown } | null)?.id);

/**
 * Keeps the items whose `id` is in `owned`, and nothing else of the list: a bare array is filtered; an object keeps
 * every field, with each array field filtered (a `totalCount` then counts what is left). Anything else becomes `[]`,
 * never the upstream's body (it would name other tenants' items).
 */
export function keepOwnedItems(answer: unknown, owned: ReadonlySet<string>): unknown {
  if (Array.isArray(answer)) return answer.filter((x) => owned.has(idOf(x)));
  if (!answer || typeof answer !== "object") return [];
  const out: Record<string, unknown> = { ...(answer as Record<string, unknown>) };
  let kept: number | undefined;
  for (const [k, v] of Object.entries(out)) {
    if (!Array.isArray(v)) continue;
    const mine = v.filter((x) => owned.has(idOf(x)));
    out[k] = mine;
    kept = (kept ?? 0) + mine.length;
  }
  if (kept !== undefined && typeof out.totalCount === "number") out.totalCount = kept;
  return out;
}
