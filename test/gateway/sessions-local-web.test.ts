// Sessions' browsers and the local web through Tollgate with the unmodified SDK holding a tenant key (the same
// specification runs directly in test/emulator/sessions-local-web.test.ts).
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { afterAll, beforeAll, describe } from "vitest";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";
import { sessionLocalWebSpec } from "../emulator/sessions-local-web-spec.js";

let stack: SessionGateway;
let hb: Hyperbrowser;

beforeAll(async () => {
  stack = await startSessionGateway([{ id: "acme" }], { modules: ["sessions", "jobs"] });
  hb = new Hyperbrowser({ apiKey: stack.keys.acme!, baseUrl: stack.gateway.url });
});
afterAll(async () => {
  await stack?.close();
});

describe("sessions reach the local web, through the gateway", () => sessionLocalWebSpec(() => hb));
