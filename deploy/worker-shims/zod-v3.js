// `zod/v3` in the Worker: the MCP SDK builds a Zod 3 object only when every field of a tool's shape is Zod 3; every
// tool schema here is Zod 4. A call is counted and refused (never.js).
import { never } from "./never.js";

export function object() {
  never("zod/v3.object", "Zod 3 schemas are not supported in the Worker (tool schemas are Zod 4)");
}
