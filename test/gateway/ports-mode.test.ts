import { describe, expect, it } from "vitest";
import { portRoute, refuseUnsendableMode } from "../../src/sandboxes/ports.js";

describe("how exposed-port traffic reaches the upstream", () => {
  it("auto: reaches a named runtime host's <port>-<id> host by DNS (production, Workers)", () => {
    for (const setsHost of [true, false]) expect(portRoute("auto", "runtime.example.com", setsHost)).toBe("dns");
  });
  it("auto: names the port in Host for localhost and IP runtimes (a local emulator) where the transport sends Host", () => {
    for (const h of ["localhost", "emu.localhost", "127.0.0.1", "[::1]", "::1"]) expect(portRoute("auto", h, true)).toBe("host-header");
  });
  it("auto: names the port in x-tollgate-port-host where the transport cannot set Host (Workers' fetch)", () => {
    for (const h of ["localhost", "emu.localhost", "127.0.0.1", "[::1]", "::1"]) expect(portRoute("auto", h, false)).toBe("port-header");
  });
  it("an explicit mode wins", () => {
    expect(portRoute("dns", "localhost", true)).toBe("dns");
    expect(portRoute("host-header", "runtime.example.com", true)).toBe("host-header");
    expect(portRoute("port-header", "localhost", true)).toBe("port-header");
  });
  it("refuses at start a Host-header mode the runtime cannot carry out, naming the field", () => {
    expect(() => refuseUnsendableMode("host-header", false)).toThrow(/upstream\.exposedPorts: "host-header"/);
    for (const mode of ["auto", "dns", "port-header"] as const) expect(() => refuseUnsendableMode(mode, false)).not.toThrow();
    expect(() => refuseUnsendableMode("host-header", true)).not.toThrow();
  });
});
