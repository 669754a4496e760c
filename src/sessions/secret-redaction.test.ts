import { describe, expect, it } from "vitest";
import { SecretRedaction } from "./secret-redaction.js";
import { navigationRefusal } from "../agent-policy/engine.js";

const SECRET = 'p@ss w/"rd+é!';

describe("SecretRedaction", () => {
  const r = new SecretRedaction();
  r.add(SECRET);
  const spellings = [
    SECRET,
    JSON.stringify(SECRET).slice(1, -1),
    encodeURIComponent(SECRET),
    new URLSearchParams({ x: SECRET }).toString().slice(2),
  ];

  it("removes the value in each spelling a CDP message carries, and keeps the JSON valid", () => {
    for (const s of spellings) {
      const msg = JSON.stringify({ method: "Network.requestWillBeSent", params: { postData: `user=a&pw=${s}&x=1` } });
      const out = r.apply(msg);
      expect(out).not.toContain(s);
      expect(() => JSON.parse(out)).not.toThrow();
    }
  });

  it("removes it from base64 at any offset (request bodies, response bodies)", () => {
    for (const prefix of ["", "a", "ab", "abc", "user=alice&pw="]) {
      for (const s of spellings) {
        const b64 = Buffer.from(`${prefix}${s}&tail`).toString("base64");
        const out = r.apply(JSON.stringify({ bytes: b64 }));
        const decoded = Buffer.from(JSON.parse(out).bytes, "base64").toString("utf8");
        expect(decoded).not.toContain(s);
      }
    }
  });

  it("leaves messages without the value as they were", () => {
    const msg = JSON.stringify({ id: 1, result: { value: "p@ss w/rd" } });
    expect(r.apply(msg)).toBe(msg);
  });
});

describe("navigationRefusal", () => {
  const deny = [{ by: "tenant" as const, policy: { domains: { deny: ["denied.example"] } } }];
  const allow = [{ by: "token" as const, policy: { domains: { allow: ["ok.example"] } } }];
  it("reads the host a page reaches, through blob: and view-source:", () => {
    expect(navigationRefusal(deny, "https://a.denied.example/x")).toMatchObject({ policy: "domains.deny", host: "a.denied.example" });
    expect(navigationRefusal(deny, "blob:https://denied.example/uuid")).toMatchObject({ policy: "domains.deny" });
    expect(navigationRefusal(deny, "view-source:https://denied.example/")).toMatchObject({ policy: "domains.deny" });
    expect(navigationRefusal(deny, "https://fine.example/")).toBeUndefined();
  });
  it("lets pages that reach no host pass; under an allow list refuses schemes that name none", () => {
    for (const u of ["about:blank", "", "data:text/html,hi", "chrome-error://chromewebdata/"]) {
      expect(navigationRefusal(allow, u)).toBeUndefined();
    }
    expect(navigationRefusal(allow, "file:///etc/passwd")).toMatchObject({ policy: "domains.allow", host: "file:" });
    expect(navigationRefusal(deny, "file:///etc/passwd")).toBeUndefined();
    expect(navigationRefusal(allow, "https://other.example/")).toMatchObject({ policy: "domains.allow", by: "token" });
  });
});
