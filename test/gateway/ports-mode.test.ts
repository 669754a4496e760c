import { describe, expect, it } from "vitest";
import { exposedPortsViaDns } from "../../src/sandboxes/ports.js";

describe("how exposed-port traffic reaches the upstream", () => {
  it("auto: reaches a named runtime host's <port>-<id> host by DNS (production, Workers)", () => {
    expect(exposedPortsViaDns("auto", "runtime.example.com")).toBe(true);
  });
  it("auto: goes through the runtime host with a Host header for localhost and IP runtimes (a local emulator)", () => {
    for (const h of ["localhost", "emu.localhost", "127.0.0.1", "[::1]", "::1"]) expect(exposedPortsViaDns("auto", h)).toBe(false);
  });
  it("an explicit mode wins", () => {
    expect(exposedPortsViaDns("dns", "localhost")).toBe(true);
    expect(exposedPortsViaDns("host-header", "runtime.example.com")).toBe(false);
  });
});
