// `zod/v3` in the Worker: the MCP SDK builds a Zod 3 object only when every field of a tool's shape is Zod 3; every
// tool schema here is Zod 4.
export function object() {
  throw new Error("Zod 3 schemas are not supported in the Worker (tool schemas are Zod 4)");
}
