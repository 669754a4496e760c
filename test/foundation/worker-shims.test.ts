// The stand-ins the Worker bundle swaps in (wrangler.toml [alias], deploy/worker-shims/) for code the Worker never runs:
// each refuses by name and counts the call where the Workers tests look (test/workers/stand-ins.ts: the MCP and payment
// flows in workerd end with none counted). Maintained libraries the Worker runs (lru-cache, zod) have no stand-in.
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "smol-toml";
// @ts-expect-error plain JS without declarations: the Worker's stand-ins
import Ajv from "../../deploy/worker-shims/ajv.js";
// @ts-expect-error plain JS without declarations
import addFormats from "../../deploy/worker-shims/ajv-formats.js";
// @ts-expect-error plain JS without declarations
import { createPublicClient, createClient } from "../../deploy/worker-shims/viem.js";
// @ts-expect-error plain JS without declarations
import { zodToJsonSchema } from "../../deploy/worker-shims/zod-to-json-schema.js";
// @ts-expect-error plain JS without declarations
import { object as zod3Object } from "../../deploy/worker-shims/zod-v3.js";

const KEY = Symbol.for("tollgate.standInCalls");
const counted = () => ((globalThis as Record<symbol, unknown>)[KEY] as string[] | undefined) ?? [];

describe("the Worker's stand-ins", () => {
  afterEach(() => {
    delete (globalThis as Record<symbol, unknown>)[KEY];
  });

  it("refuse by name what the Worker never does, and count each call", () => {
    const ajv = addFormats(new Ajv());
    expect(ajv.getSchema("x")).toBeUndefined();
    expect(counted()).toEqual([]); // building the validator (the MCP SDK's server does) is not a call
    expect(() => ajv.compile({ type: "object" })).toThrow(/not available in the Worker/);
    expect(() => zodToJsonSchema()).toThrow(/Zod 3/);
    expect(() => zod3Object({})).toThrow(/Zod 3/);
    expect(() => createPublicClient({})).toThrow(/createClient/);
    expect(counted()).toEqual(["ajv.compile", "zodToJsonSchema", "zod/v3.object", "viem.createPublicClient"]);
  });

  it("leave the rest of viem as it is", () => {
    expect(typeof createClient).toBe("function");
  });

  it("replace no maintained library the Worker runs: lru-cache and zod are bundled as they are", () => {
    const alias = (parse(readFileSync("wrangler.toml", "utf8")) as { alias: Record<string, string> }).alias;
    expect(Object.keys(alias).sort()).toEqual(["ajv", "ajv-formats", "ethers", "viem", "zod-to-json-schema", "zod/v3"]);
  });

  it("refuse ethers when imported (siwe's optional verifier; SIWX proofs are verified with viem)", async () => {
    // @ts-expect-error plain JS without declarations
    await expect(import("../../deploy/worker-shims/ethers.js")).rejects.toThrow(/verified with viem/);
    expect(counted()).toEqual(["ethers"]);
  });
});
