// `ajv` in the Worker: the MCP SDK builds an Ajv instance for JSON Schema checks of elicitation answers (which the
// gateway never requests). Ajv compiles schemas with `new Function`, which Workers refuse, so the real one could not
// run there anyway; this one fails the same way, by name, and counts the call (never.js).
import { never } from "./never.js";

export default class Ajv {
  compile() {
    never("ajv.compile", "JSON Schema validation (ajv) is not available in the Worker");
  }
  getSchema() {
    return undefined;
  }
  errorsText() {
    return "";
  }
}
