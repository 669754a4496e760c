import { describe, expect, it } from "vitest";
import { node, parsesUnder, python } from "../../test/fixtures/sdk-models.js";
import { keepOwnedItems } from "./owned-items.js";

const ext = (id: string) => ({ id, name: `ext ${id}`, createdAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:00.000Z" });
const owned = new Set(["mine-1", "mine-2"]);
const upstreamItems = [ext("mine-1"), ext("theirs"), ext("mine-2")];

describe("keepOwnedItems (an unpaged list cut to one tenant, in the upstream's shape)", () => {
  it("filters a bare array and answers a bare array (what the Node SDK's type says)", () => {
    const out = keepOwnedItems(upstreamItems, owned);
    expect(out).toEqual([ext("mine-1"), ext("mine-2")]);
    expect(parsesUnder(node.ExtensionList, out)).toEqual([]);
  });

  it("filters {extensions:[…]} and answers the same object (what the Python SDK requires), other fields kept", () => {
    const out = keepOwnedItems({ extensions: upstreamItems, note: "kept" }, owned);
    expect(out).toEqual({ extensions: [ext("mine-1"), ext("mine-2")], note: "kept" });
    expect(parsesUnder(python.ExtensionList, out)).toEqual([]);
  });

  it("never turns a tenant's items into an empty list because of the shape", () => {
    for (const shape of [upstreamItems, { extensions: upstreamItems }]) {
      const out = keepOwnedItems(shape, owned);
      const items = Array.isArray(out) ? out : (out as { extensions: unknown[] }).extensions;
      expect(items).toHaveLength(2);
    }
  });

  it("counts only what is left in totalCount", () => {
    expect(keepOwnedItems({ extensions: upstreamItems, totalCount: 3 }, owned)).toMatchObject({ totalCount: 2 });
  });

  it("answers an empty list for nothing owned, and [] for an answer that is no list (never the upstream's body)", () => {
    expect(keepOwnedItems(upstreamItems, new Set())).toEqual([]);
    expect(keepOwnedItems({ extensions: upstreamItems }, new Set())).toEqual({ extensions: [] });
    expect(keepOwnedItems("text", owned)).toEqual([]);
    expect(keepOwnedItems(null, owned)).toEqual([]);
  });
});
