// Performs computer actions as a user's mouse and keyboard would, with CDP Input.* events on the tab in front.
import type { CdpConnection } from "./cdp-connection.js";
import type { ComputerActionBody, MouseButtonName } from "./computer-action-schema.js";
import type { PageTracker } from "./page-tracker.js";
import { keyForChar, keysForCombo, type KeyDefinition } from "./xdotool-keys.js";

export interface ComputerActionResult {
  success: boolean;
  screenshot?: string;
  data?: { clipboardText?: string } | { activeWindowId: string; windows: Array<{ id: string; name: string; active: boolean }> };
  error?: string;
  message?: string;
}

/** Pointer and modifier state survives between actions, as a real mouse held down does. */
export interface InputState {
  x: number;
  y: number;
  buttons: number;
}

const BUTTONS: Record<MouseButtonName, { name: string; bit: number }> = {
  left: { name: "left", bit: 1 },
  right: { name: "right", bit: 2 },
  middle: { name: "middle", bit: 4 },
  wheel: { name: "middle", bit: 4 },
  back: { name: "back", bit: 8 },
  forward: { name: "forward", bit: 16 },
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function performComputerAction(
  pages: PageTracker,
  state: InputState,
  action: ComputerActionBody,
): Promise<ComputerActionResult> {
  const page = await pages.ensureActive();
  const sessionId = await pages.sessionFor(page.targetId);
  const cdp = pages.cdp;
  const send = (method: string, params: Record<string, unknown>) => cdp.send(method, params, sessionId);
  const mouse = (type: string, extra: Record<string, unknown> = {}) =>
    send("Input.dispatchMouseEvent", { type, x: state.x, y: state.y, buttons: state.buttons, ...extra });
  const moveTo = async (x: number, y: number) => {
    state.x = x;
    state.y = y;
    const held = Object.values(BUTTONS).find((b) => b.bit & state.buttons);
    await mouse("mouseMoved", { button: held?.name ?? "none" });
  };
  const press = async (b: MouseButtonName, clickCount = 1) => {
    state.buttons |= BUTTONS[b].bit;
    await mouse("mousePressed", { button: BUTTONS[b].name, clickCount });
  };
  const release = async (b: MouseButtonName, clickCount = 1) => {
    state.buttons &= ~BUTTONS[b].bit;
    await mouse("mouseReleased", { button: BUTTONS[b].name, clickCount });
  };

  let data: ComputerActionResult["data"];
  switch (action.action) {
    case "click":
      await moveTo(action.x ?? state.x, action.y ?? state.y);
      for (let n = 1; n <= action.numClicks; n++) {
        await press(action.button, n);
        await release(action.button, n);
      }
      break;
    case "move_mouse":
      await moveTo(action.x, action.y);
      break;
    case "drag": {
      const [first, ...rest] = action.path;
      await moveTo(first.x, first.y);
      await press("left");
      let prev = first;
      for (const point of rest) {
        // Intermediate moves, so pages that track pointermove see a continuous drag.
        const steps = Math.min(10, Math.max(1, Math.round(Math.hypot(point.x - prev.x, point.y - prev.y) / 25)));
        for (let i = 1; i <= steps; i++) await moveTo(prev.x + ((point.x - prev.x) * i) / steps, prev.y + ((point.y - prev.y) * i) / steps);
        prev = point;
      }
      await release("left");
      break;
    }
    case "scroll":
      await moveTo(action.x, action.y);
      await mouse("mouseWheel", { deltaX: action.scrollX, deltaY: action.scrollY });
      break;
    case "mouse_down":
      await press(action.button);
      break;
    case "mouse_up":
      await release(action.button);
      break;
    case "type_text":
      await typeText(cdp, sessionId, action.text);
      break;
    case "press_keys":
      for (const combo of action.keys) await pressCombo(cdp, sessionId, keysForCombo(combo));
      break;
    case "hold_key":
      await pressCombo(cdp, sessionId, keysForCombo(action.key), action.duration * 1000);
      break;
    case "put_selection_text":
      // Replaces the focused field's selection with the text, as a paste of the X selection would.
      await send("Input.insertText", { text: action.text });
      break;
    case "get_clipboard_text":
      data = { clipboardText: await readClipboard(cdp, sessionId) };
      break;
    case "list_windows": {
      const windows = await pages.refreshed();
      const active = pages.active();
      data = {
        activeWindowId: active?.targetId ?? "",
        windows: windows.map((p) => ({ id: p.targetId, name: p.title || p.url, active: p.targetId === active?.targetId })),
      };
      break;
    }
    case "screenshot":
      break;
  }

  const wantsShot = action.action === "screenshot" || action.returnScreenshot === true;
  const result: ComputerActionResult = { success: true };
  if (data) result.data = data;
  if (wantsShot) result.screenshot = await screenshot(cdp, sessionId);
  return result;
}

async function dispatchKey(cdp: CdpConnection, sessionId: string, def: KeyDefinition, down: boolean, modifiers: number): Promise<void> {
  // With Control/Alt/Meta held a key inserts no text, so the page sees a shortcut rather than a character.
  const text = down && def.text && !(modifiers & 0b0111) ? def.text : undefined;
  await cdp.send(
    "Input.dispatchKeyEvent",
    {
      type: down ? (text ? "keyDown" : "rawKeyDown") : "keyUp",
      key: def.key,
      code: def.code,
      windowsVirtualKeyCode: def.keyCode,
      nativeVirtualKeyCode: def.keyCode,
      modifiers,
      location: def.location ?? 0,
      ...(text ? { text, unmodifiedText: text } : {}),
    },
    sessionId,
  );
}

async function pressCombo(cdp: CdpConnection, sessionId: string, keys: KeyDefinition[], holdMs = 0): Promise<void> {
  let modifiers = 0;
  for (const k of keys) {
    modifiers |= k.modifier ?? 0;
    await dispatchKey(cdp, sessionId, k, true, modifiers);
  }
  if (holdMs > 0) await sleep(holdMs);
  for (const k of [...keys].reverse()) {
    await dispatchKey(cdp, sessionId, k, false, modifiers);
    modifiers &= ~(k.modifier ?? 0);
  }
}

async function typeText(cdp: CdpConnection, sessionId: string, text: string): Promise<void> {
  for (const ch of text) {
    const def = keyForChar(ch);
    if (!def) {
      await cdp.send("Input.insertText", { text: ch }, sessionId);
      continue;
    }
    await dispatchKey(cdp, sessionId, def, true, 0);
    await dispatchKey(cdp, sessionId, def, false, 0);
  }
}

async function readClipboard(cdp: CdpConnection, sessionId: string): Promise<string> {
  await cdp.send("Browser.grantPermissions", { permissions: ["clipboardReadWrite", "clipboardSanitizedWrite"] }).catch(() => {});
  await cdp.send("Emulation.setFocusEmulationEnabled", { enabled: true }, sessionId).catch(() => {});
  const r = await cdp.send<any>(
    "Runtime.evaluate",
    { expression: "navigator.clipboard.readText()", awaitPromise: true, userGesture: true, returnByValue: true },
    sessionId,
  );
  if (r.exceptionDetails) throw new Error(`Clipboard unavailable: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
  return String(r.result?.value ?? "");
}

async function screenshot(cdp: CdpConnection, sessionId: string): Promise<string> {
  const r = await cdp.send<{ data: string }>("Page.captureScreenshot", { format: "png" }, sessionId);
  return r.data;
}
