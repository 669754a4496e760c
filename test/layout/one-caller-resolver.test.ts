// One caller resolver (issue 27): credentials are read only in middleware/identify (the step) and src/identity (what it
// reads them with). Every other module acts on the caller identify set (c.get("caller")) or on the answer of one of
// identity's functions (portVisitor, liveViewer, signInKey).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * What reads a credential: a header's key or bearer, a token's verification, a key's lookup, a cookie. An x402 payment
 * checked by a facilitator (src/sales, `facilitator.verify(`) is a payment, not a credential: the wallet tenant it pays
 * as is handed to identify (`soldCaller`), which admits it as it admits any caller.
 */
const READS_A_CREDENTIAL = /\b(presentedKey|bearerToken|getCookie)\(|(?<!facilitator)\.verify\(|directory\.authenticate\(|\.authenticate\(/;

function shippedFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => /\.tsx?$/.test(f) && !/\.test\.tsx?$/.test(f) && !f.endsWith(".d.ts"))
    .map((f) => join(dir, f));
}

describe("one caller resolver", () => {
  it("no module outside middleware/identify and src/identity reads a credential", () => {
    const readers = [...shippedFiles("src"), ...shippedFiles("middleware")]
      .filter((f) => !f.startsWith(join("middleware", "identify")) && !f.startsWith(join("src", "identity")))
      .filter((f) => READS_A_CREDENTIAL.test(readFileSync(f, "utf8")));
    expect(readers).toEqual([]);
  });

  it("middleware/identify and src/identity do read them (the check above would pass on nothing otherwise)", () => {
    const inIdentify = [...shippedFiles(join("middleware", "identify")), ...shippedFiles(join("src", "identity"))].filter((f) =>
      READS_A_CREDENTIAL.test(readFileSync(f, "utf8")),
    );
    expect(inIdentify.length).toBeGreaterThanOrEqual(2);
  });
});
