// `zod` in the Worker: zod 4 itself, and beside it the `z` that @x402/core builds its payment schemas with. @x402/core
// ships its own copy of Zod 3 (about 12 KiB gzip in the bundle) for a dozen plain schemas; the Worker builds them with
// zod 4, whose API they share but for `z.record(value)` (zod 4 names the key schema too). The `z` below holds what
// @x402/core and @x402/evm call; test/foundation/worker-shims.test.ts fails on a call it lacks and checks that the
// schemas parse alike. Our own code imports zod 4 as a namespace (`import * as z`), never this `z`.
import {
  array,
  boolean,
  custom,
  discriminatedUnion,
  literal,
  number,
  object,
  record as record4,
  string,
  union,
  unknown,
} from "../../node_modules/zod/index.js";

export * from "../../node_modules/zod/index.js";

/** Zod 3's `record(value)` (string keys) and `record(key, value)`. */
function record(key, value) {
  return value === undefined ? record4(string(), key) : record4(key, value);
}

export const z = { array, boolean, custom, discriminatedUnion, literal, number, object, record, string, union, unknown };
