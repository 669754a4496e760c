import { Hono } from "hono";
import { TrieRouter } from "hono/router/trie-router";
import { describe, expect, it } from "vitest";
import { RememberingRouter } from "./remembering-router.js";

const routes: Array<[string, string]> = [
  ["ALL", "*"],
  ["GET", "/api/scrape/batch/:id"],
  ["GET", "/api/scrape/:id"],
  ["POST", "/sandbox/:id/processes/:pid/wait"],
  ["GET", "/sandbox/:id/processes"],
  ["GET", "/_tollgate/docs/init.js"],
  ["GET", "/_tollgate/docs/:asset"],
];

const both = () => {
  const trie = new TrieRouter<string>();
  const remembering = new RememberingRouter<string>(4);
  for (const [m, p] of routes) {
    trie.add(m, p, `${m} ${p}`);
    remembering.add(m, p, `${m} ${p}`);
  }
  return { trie, remembering };
};

describe("RememberingRouter (TrieRouter with recent matches kept)", () => {
  it("answers what TrieRouter answers, the first time and when remembered, on the table's literal-beside-parameter paths", () => {
    const { trie, remembering } = both();
    const asked: Array<[string, string]> = [
      ["GET", "/api/scrape/batch/b1"],
      ["GET", "/api/scrape/j1"],
      ["POST", "/sandbox/s1/processes/p1/wait"],
      ["GET", "/sandbox/s1/processes"],
      ["GET", "/_tollgate/docs/init.js"],
      ["GET", "/_tollgate/docs/page.css"],
      ["DELETE", "/nothing/here"],
    ];
    for (const [m, p] of asked) {
      const fresh = trie.match(m, p);
      expect(remembering.match(m, p)).toEqual(fresh);
      expect(remembering.match(m, p)).toEqual(fresh); // remembered (or, past capacity, matched again)
    }
  });

  it("keeps no more than its capacity, oldest out first, and never a long path", () => {
    const { remembering } = both();
    for (let i = 0; i < 10; i++) remembering.match("GET", `/api/scrape/j${i}`);
    expect(remembering.size).toBe(4);
    remembering.match("GET", `/api/scrape/${"x".repeat(300)}`);
    expect(remembering.size).toBe(4);
    expect(remembering.match("GET", "/api/scrape/j9")[0].map(([h]) => h)).toEqual(["ALL *", "GET /api/scrape/:id"]);
  });

  it("forgets what it kept when a route is added after a match", () => {
    const { remembering } = both();
    expect(remembering.match("GET", "/late")[0].map(([h]) => h)).toEqual(["ALL *"]);
    remembering.add("GET", "/late", "GET /late");
    expect(remembering.match("GET", "/late")[0].map(([h]) => h)).toEqual(["ALL *", "GET /late"]);
  });

  it("serves a Hono app: each request gets its own path parameters", async () => {
    const app = new Hono({ router: new RememberingRouter() });
    app.get("/sandbox/:id/processes/:pid", (c) => c.json(c.req.param()));
    for (const [id, pid] of [
      ["a", "1"],
      ["b", "2"],
      ["a", "1"],
      ["a%20b", "3"],
    ] as const) {
      const res = await app.request(`/sandbox/${id}/processes/${pid}`);
      expect(await res.json()).toEqual({ id: decodeURIComponent(id), pid });
    }
  });
});
