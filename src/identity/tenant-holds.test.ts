import { describe, expect, it } from "vitest";
import { tenantSchema } from "../../config/tenant-schema.js";
import { holdsFor, withHolds } from "./tenant-holds.js";

const hash = (c: string) => `sha256:${c.repeat(64)}`;
const file = tenantSchema.parse({
  id: "acme",
  keys: [{ hash: hash("a") }, { hash: hash("b"), expiresAt: "2030-01-01T00:00:00.000Z" }],
  budget: { daily: "5.00" },
});

describe("an operator's holds on a file-owned tenant", () => {
  it("keeps a disable, a revoked key, an extra key and an earlier expiry, and lays them over a new file block", () => {
    const after = {
      ...file,
      enabled: false,
      keys: [
        { hash: hash("b"), expiresAt: "2029-01-01T00:00:00.000Z" },
        { hash: hash("c"), label: "incident" },
      ],
    };
    const { holds, refused } = holdsFor(file, file, after);
    expect(refused).toEqual([]);
    expect(holds).toEqual({
      disabled: true,
      revoked: [hash("a")],
      expires: { [hash("b")]: "2029-01-01T00:00:00.000Z" },
      added: [{ hash: hash("c"), label: "incident" }],
    });
    expect(withHolds(file, holds)).toEqual(after);
    // The file changes its budget: the new block, with the holds over it.
    const next = { ...file, budget: { daily: "6.00" } };
    expect(withHolds(next, holds)).toEqual({ ...after, budget: { daily: "6.00" } });
  });

  it("refuses what fights the file: a setting, enabling what it disables, a later expiry of its key", () => {
    expect(holdsFor(file, file, { ...file, budget: { daily: "9.00" } }).refused).toEqual(["budget"]);
    expect(holdsFor(file, file, { ...file, agentPolicies: { wide: {} } }).refused).toEqual(["agentPolicies"]);
    const off = { ...file, enabled: false };
    expect(holdsFor(off, off, { ...off, enabled: true }).refused).toEqual(["enabled (the file disables the tenant)"]);
    const later = { ...file, keys: [file.keys[0]!, { hash: hash("b"), expiresAt: "2031-01-01T00:00:00.000Z" }] };
    expect(holdsFor(file, file, later).refused).toEqual([expect.stringContaining("expiresAt (later than the file's)")]);
  });

  it("enabling again lifts the hold: no holds left is the file as it is", () => {
    const { holds } = holdsFor(file, { ...file, enabled: false }, file);
    expect(holds).toBeUndefined();
    expect(withHolds(file, undefined)).toBe(file);
  });
});
