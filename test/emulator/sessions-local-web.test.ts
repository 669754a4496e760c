// Sessions' browsers and the local web, straight against the emulator with the unmodified SDK (the same
// specification runs through the gateway in test/gateway/sessions-local-web.test.ts).
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { afterAll, beforeAll, describe } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { sessionLocalWebSpec } from "./sessions-local-web-spec.js";

let emu: EmulatorHandle;
let hb: Hyperbrowser;

beforeAll(async () => {
  emu = await startEmulator({ modules: ["sessions", "jobs"] });
  hb = new Hyperbrowser({ apiKey: emu.apiKey, baseUrl: emu.controlUrl });
});
afterAll(async () => {
  await emu?.close();
});

describe("sessions reach the local web, directly", () => sessionLocalWebSpec(() => hb));
