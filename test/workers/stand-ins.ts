// The calls the Worker's stand-ins counted in this isolate (deploy/worker-shims/never.js): each replaces code the Worker
// never runs (wrangler.toml [alias], applied to the Worker's modules in these tests too), so after any flow it is empty.
export function standInCalls(): string[] {
  return [...(((globalThis as Record<symbol, unknown>)[Symbol.for("tollgate.standInCalls")] as string[] | undefined) ?? [])];
}
