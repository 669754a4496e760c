// `zod-to-json-schema` in the Worker: the MCP SDK uses it only for Zod 3 schemas; every tool schema here is Zod 4,
// which the SDK converts with Zod's own toJSONSchema. A call is counted and refused (never.js).
import { never } from "./never.js";

export function zodToJsonSchema() {
  never("zodToJsonSchema", "Zod 3 schemas are not supported in the Worker (tool schemas are Zod 4)");
}
