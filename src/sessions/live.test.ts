import { describe, expect, it } from "vitest";
import { liveViewScreen } from "./live.js";

const cmd = (id: number, method: string, params: object = {}, sessionId?: string) => JSON.stringify({ id, method, params, sessionId });
const replyOf = (v: { forward: string } | { reply: string }) => ("reply" in v ? JSON.parse(v.reply) : undefined);

describe("the live view's screen on the CDP relay", () => {
  const interactive = liveViewScreen(true);
  const viewOnly = liveViewScreen(false);

  it("passes what a viewer needs: targets, a flattened attach, the screencast and its acks", () => {
    for (const m of [
      cmd(1, "Target.getTargets"),
      cmd(2, "Target.attachToTarget", { targetId: "T", flatten: true }),
      cmd(3, "Page.startScreencast", { format: "jpeg" }, "S"),
      cmd(4, "Page.screencastFrameAck", { sessionId: 1 }, "S"),
    ])
      for (const screen of [interactive, viewOnly]) expect(screen(m)).toEqual({ forward: m });
  });

  it("passes mouse and keys only when the session is not view-only", () => {
    const click = cmd(5, "Input.dispatchMouseEvent", { type: "mousePressed", x: 1, y: 1 }, "S");
    expect(interactive(click)).toEqual({ forward: click });
    expect(replyOf(viewOnly(click))).toEqual({ id: 5, sessionId: "S", error: { code: -32601, message: "This live view is view-only." } });
  });

  it("answers anything that reads or runs page code with a CDP error instead of forwarding it", () => {
    for (const method of ["Runtime.evaluate", "Network.getAllCookies", "Target.createTarget", "Browser.close", "Storage.getCookies"])
      expect(replyOf(interactive(cmd(9, method)))).toMatchObject({ id: 9, error: { code: -32601 } });
  });

  it("refuses the nested attachToTarget form (it tunnels any command through sendMessageToTarget)", () => {
    expect(replyOf(interactive(cmd(6, "Target.attachToTarget", { targetId: "T" })))).toMatchObject({ id: 6, error: {} });
  });

  it("answers junk, huge and id-less messages without forwarding them", () => {
    expect("reply" in interactive("not json")).toBe(true);
    expect("reply" in interactive(JSON.stringify({ method: "Target.getTargets" }))).toBe(true);
    expect("reply" in interactive(cmd(7, "Input.insertText", { text: "x".repeat(70_000) }))).toBe(true);
  });
});
