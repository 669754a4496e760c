// Contract for the OAuth store (src/state/oauth.ts) over each backend's key-value store: a code is exchanged once and a
// refresh token rotated once across instances, a second use is reported as a replay (with the grant to revoke), and a
// tenant's grants list is its own, newest first, whatever the concurrency. Also: a ledger entry keeps its grant.
import { describe, expect, it } from "vitest";
import { kvOAuthStore, type OAuthCode, type OAuthGrant } from "../../src/state/oauth.js";
import { opener, type ContractBackend } from "./contract-backend.js";

const T0 = 1_800_000_000_000;
const code = (grantId: string): OAuthCode => ({
  grantId,
  tenant: "acme",
  clientId: "tgc_0123456789abcdef0123456789abcdef",
  clientName: "Agent",
  redirectHost: "127.0.0.1:9",
  redirectUri: "http://127.0.0.1:9/cb",
  codeChallenge: "x".repeat(43),
  scopes: ["search"],
  cap: "1000000",
  capWindow: "daily",
  resource: "https://gw.example/mcp",
  expiresAt: T0 + 86_400_000,
});
const grant = (id: string, tenant = "acme"): OAuthGrant => {
  const { grantId: _g, redirectUri: _r, codeChallenge: _c, ...consent } = code(id);
  return { ...consent, tenant, id, createdAt: T0, refreshedAt: T0, issued: 1 };
};

export function oauthContract(b: ContractBackend) {
  describe(`OAuthStore (${b.name})`, () => {
    const open = opener(b);

    it("keeps clients and pending requests; a pending request is taken once", async () => {
      const s = kvOAuthStore((await open.fresh()).kv);
      const client = { clientId: "tgc_a", redirectUris: ["http://127.0.0.1/cb"], via: "registration" as const, createdAt: T0 };
      await s.putClient(client, 60_000);
      expect(await s.getClient("tgc_a")).toEqual(client);
      expect(await s.getClient("tgc_b")).toBeUndefined();
      await s.putPending("r1", "{}", 60_000);
      expect(await s.getPending("r1")).toBe("{}");
      expect(await s.takePending("r1")).toBe("{}");
      expect(await s.takePending("r1")).toBeUndefined();
    });

    it("exchanges a code once across instances; every other try is a replay naming the grant", async () => {
      const [a, b2] = (await open.pair()).map((x) => kvOAuthStore(x.kv));
      await a!.putCode("d1", code("grt_1"), 60_000);
      const uses = await Promise.all([a!.useCode("d1"), b2!.useCode("d1"), a!.useCode("d1"), b2!.useCode("d1")]);
      expect(uses.filter((u) => u && !u.replayed)).toHaveLength(1);
      expect(uses.filter((u) => u?.replayed).map((u) => (u as { grantId: string }).grantId)).toEqual(["grt_1", "grt_1", "grt_1"]);
      expect(await a!.useCode("d1")).toEqual({ grantId: "grt_1", replayed: true });
      expect(await a!.useCode("unknown")).toBeUndefined();
    });

    it("rotates a refresh token once across instances; a later use names its grant and the first use's moment", async () => {
      const [a, b2] = (await open.pair()).map((x) => kvOAuthStore(x.kv));
      await a!.putRefresh("r1", "grt_9", 60_000);
      expect(await b2!.refreshGrant("r1")).toBe("grt_9");
      const uses = await Promise.all([a!.useRefresh("r1", T0), b2!.useRefresh("r1", T0 + 1), a!.useRefresh("r1", T0 + 2)]);
      expect(uses.filter((u) => u && !u.reused)).toHaveLength(1);
      const first = uses.findIndex((u) => u && !u.reused);
      expect(uses.filter((u) => u?.reused)).toHaveLength(2);
      expect(await b2!.useRefresh("r1", T0 + 9_000)).toEqual({ grantId: "grt_9", reused: true, usedAt: T0 + first });
      expect(await b2!.useRefresh("nope", T0)).toBeUndefined();
      // The first use's answer (sealed by the caller) is there for its twins on the other instance.
      await a!.putRefreshAnswer("r1", "sealed-pair", 5_000);
      expect(await b2!.getRefreshAnswer("r1")).toBe("sealed-pair");
      expect(await b2!.getRefreshAnswer("r2")).toBeUndefined();
    });

    it("a code can be read before it is used, and reading does not use it", async () => {
      const s = kvOAuthStore((await open.fresh()).kv);
      await s.putCode("d2", code("grt_2"), 60_000);
      expect(await s.peekCode("d2")).toMatchObject({ grantId: "grt_2" });
      expect(await s.peekCode("d2")).toMatchObject({ grantId: "grt_2" });
      expect(await s.useCode("d2")).toMatchObject({ replayed: false });
      expect(await s.peekCode("d2")).toBeUndefined();
      expect(await s.peekCode("none")).toBeUndefined();
    });

    it("lists a tenant's grants newest first, none lost to concurrent creation, none of another tenant", async () => {
      const [a, b2] = (await open.pair()).map((x) => kvOAuthStore(x.kv));
      await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? a! : b2!).putGrant(grant(`grt_${i}`), true)));
      await a!.putGrant(grant("grt_other", "initech"), true);
      const listed = await b2!.listGrants("acme");
      expect(listed.map((g) => g.id).sort()).toEqual(["grt_0", "grt_1", "grt_2", "grt_3", "grt_4", "grt_5"]);
      await a!.putGrant({ ...grant("grt_6"), createdAt: T0 + 1 }, true);
      expect((await b2!.listGrants("acme"))[0]!.id).toBe("grt_6");
      expect((await a!.listGrants("initech")).map((g) => g.id)).toEqual(["grt_other"]);
      // An update (revocation) changes the record, not the list.
      await a!.putGrant({ ...grant("grt_6"), revokedAt: T0 + 5 }, false);
      expect(await b2!.getGrant("grt_6")).toMatchObject({ revokedAt: T0 + 5 });
      expect(await b2!.listGrants("acme")).toHaveLength(7);
      expect(await a!.count("c", 60_000)).toBe(1);
      expect(await b2!.count("c", 60_000)).toBe(2);
    });

    it("lists a person's grants across tenants, newest first, none lost to concurrent creation; a key's grant is nobody's", async () => {
      const [a, b2] = (await open.pair()).map((x) => kvOAuthStore(x.kv));
      const mine = (id: string, tenant: string, at = T0): OAuthGrant => ({
        ...grant(id, tenant),
        person: "oidc:tom",
        personRole: "tenant",
        createdAt: at,
      });
      await Promise.all(
        Array.from({ length: 4 }, (_, i) => (i % 2 ? a! : b2!).putGrant(mine(`grt_p${i}`, i < 2 ? "acme" : "initech"), true)),
      );
      await a!.putGrant({ ...grant("grt_key"), parentKey: "k1" }, true);
      await a!.putGrant({ ...grant("grt_ann"), person: "oidc:ann" }, true);
      const listed = await b2!.listPersonGrants("oidc:tom");
      expect(listed.map((g) => g.id).sort()).toEqual(["grt_p0", "grt_p1", "grt_p2", "grt_p3"]);
      await b2!.putGrant(mine("grt_p4", "acme", T0 + 1), true);
      expect((await a!.listPersonGrants("oidc:tom"))[0]!.id).toBe("grt_p4");
      expect((await a!.listPersonGrants("oidc:ann")).map((g) => g.id)).toEqual(["grt_ann"]);
      expect(await a!.listPersonGrants("oidc:nobody")).toEqual([]);
    });

    it("a ledger entry keeps the grant its token spent under", async () => {
      const { ledger } = await open.fresh();
      const r = await ledger.reserve(
        { id: "e-grant", tenant: "acme", route: "web.search", fingerprint: "f", amount: "5000", grant: "grt_7" },
        {},
        T0,
      );
      expect(r.ok && r.entry.grant).toBe("grt_7");
      await ledger.commit("e-grant", undefined, T0 + 1);
      expect(await ledger.get("e-grant")).toMatchObject({ grant: "grt_7", state: "committed" });
      expect((await ledger.list({ tenant: "acme" }))[0]).toMatchObject({ grant: "grt_7" });
    });
  });
}
