// series(): steps run as one step of Hono's chain give the answers, headers and errors they give as steps of their own.
import { Hono, type MiddlewareHandler } from "hono";
import { describe, expect, it } from "vitest";
import { series } from "./index.js";

const order: string[] = [];
const mark =
  (name: string): MiddlewareHandler =>
  (_c, next) => {
    order.push(name);
    return next();
  };
const refuse: MiddlewareHandler = (c) => {
  if (c.req.query("refuse") === "sync") throw new Error("refused at once");
  return Promise.reject(new Error("refused later"));
};
const answerHere: MiddlewareHandler = async (c) => c.text("answered by a step", 202);
const addHeaderAfter: MiddlewareHandler = async (c, next) => {
  await next();
  c.res.headers.set("x-after", String(c.res.status));
};

/** The same steps mounted one by one and as a series: what each app answers must be the same. */
function apps(steps: MiddlewareHandler[]) {
  const make = (mount: (app: Hono) => void) => {
    const app = new Hono();
    app.onError((err, c) => c.json({ message: err.message }, 500));
    app.use(addHeaderAfter);
    mount(app);
    app.get("/x", (c) => c.text("handler"));
    return app;
  };
  const oneByOne = (app: Hono) => {
    for (const s of steps) app.use(s);
  };
  return [make(oneByOne), make((app) => app.use(series(steps)))] as const;
}

async function both(steps: MiddlewareHandler[], path: string) {
  const out = [];
  for (const app of apps(steps)) {
    order.length = 0;
    const res = await app.request(path);
    out.push({ status: res.status, body: await res.text(), after: res.headers.get("x-after"), order: [...order] });
  }
  return out;
}

describe("series", () => {
  it("runs the steps in order, then the rest of the chain", async () => {
    const [alone, shared] = await both([mark("a"), mark("b"), mark("c")], "/x");
    expect(shared).toEqual(alone);
    expect(shared).toEqual({ status: 200, body: "handler", after: "200", order: ["a", "b", "c"] });
  });

  it("answers an error thrown by a step, at once or later, as a step of its own would be answered", async () => {
    for (const how of ["sync", "later"]) {
      const [alone, shared] = await both([mark("a"), refuse, mark("never")], `/x?refuse=${how}`);
      expect(shared).toEqual(alone);
      expect(shared.status).toBe(500);
      expect(shared.order).toEqual(["a"]);
      expect(shared.after).toBe("500"); // the step outside the series still sees the answer, not the error
    }
  });

  it("hands on a step's own answer (the rest of the chain does not run)", async () => {
    const [alone, shared] = await both([mark("a"), answerHere, mark("never")], "/x");
    expect(shared).toEqual(alone);
    expect(shared).toMatchObject({ status: 202, body: "answered by a step", after: "202", order: ["a"] });
  });

  it("lets its last step work after next(), seeing the handler's answer", async () => {
    const [alone, shared] = await both([mark("a"), addHeaderAfter], "/x");
    expect(shared).toEqual(alone);
  });

  it("is the step itself when there is one", () => {
    const one = mark("x");
    expect(series([one])).toBe(one);
  });
});
