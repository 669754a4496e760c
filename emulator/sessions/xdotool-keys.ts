// xdotool key names (`ctrl+a`, `Return`, `shift+Tab`) and typed characters, translated to CDP key definitions (US layout).
import { SessionError } from "./session-error.js";

export interface KeyDefinition {
  key: string;
  code: string;
  keyCode: number;
  /** Text the key inserts; absent for control keys. */
  text?: string;
  /** CDP modifier bit when this key is a modifier (Alt 1, Control 2, Meta 4, Shift 8). */
  modifier?: number;
  location?: number;
}

const NAMED: Record<string, KeyDefinition> = {};
const alias = (names: string[], def: KeyDefinition) => {
  for (const n of names) NAMED[n.toLowerCase()] = def;
};

alias(["ctrl", "control", "control_l", "ctrl_l"], { key: "Control", code: "ControlLeft", keyCode: 17, modifier: 2, location: 1 });
alias(["control_r", "ctrl_r"], { key: "Control", code: "ControlRight", keyCode: 17, modifier: 2, location: 2 });
alias(["shift", "shift_l"], { key: "Shift", code: "ShiftLeft", keyCode: 16, modifier: 8, location: 1 });
alias(["shift_r"], { key: "Shift", code: "ShiftRight", keyCode: 16, modifier: 8, location: 2 });
alias(["alt", "alt_l", "option"], { key: "Alt", code: "AltLeft", keyCode: 18, modifier: 1, location: 1 });
alias(["alt_r", "altgr", "iso_level3_shift"], { key: "Alt", code: "AltRight", keyCode: 18, modifier: 1, location: 2 });
alias(["super", "super_l", "meta", "meta_l", "cmd", "command", "win", "windows"], { key: "Meta", code: "MetaLeft", keyCode: 91, modifier: 4, location: 1 });
alias(["super_r", "meta_r"], { key: "Meta", code: "MetaRight", keyCode: 92, modifier: 4, location: 2 });
alias(["return", "enter", "kp_enter"], { key: "Enter", code: "Enter", keyCode: 13, text: "\r" });
alias(["tab", "iso_left_tab"], { key: "Tab", code: "Tab", keyCode: 9 });
alias(["escape", "esc"], { key: "Escape", code: "Escape", keyCode: 27 });
alias(["backspace"], { key: "Backspace", code: "Backspace", keyCode: 8 });
alias(["delete", "del", "kp_delete"], { key: "Delete", code: "Delete", keyCode: 46 });
alias(["insert", "ins"], { key: "Insert", code: "Insert", keyCode: 45 });
alias(["home", "kp_home"], { key: "Home", code: "Home", keyCode: 36 });
alias(["end", "kp_end"], { key: "End", code: "End", keyCode: 35 });
alias(["prior", "page_up", "pageup", "kp_prior"], { key: "PageUp", code: "PageUp", keyCode: 33 });
alias(["next", "page_down", "pagedown", "kp_next"], { key: "PageDown", code: "PageDown", keyCode: 34 });
alias(["left", "kp_left"], { key: "ArrowLeft", code: "ArrowLeft", keyCode: 37 });
alias(["up", "kp_up"], { key: "ArrowUp", code: "ArrowUp", keyCode: 38 });
alias(["right", "kp_right"], { key: "ArrowRight", code: "ArrowRight", keyCode: 39 });
alias(["down", "kp_down"], { key: "ArrowDown", code: "ArrowDown", keyCode: 40 });
alias(["space"], { key: " ", code: "Space", keyCode: 32, text: " " });
alias(["caps_lock", "capslock"], { key: "CapsLock", code: "CapsLock", keyCode: 20 });
alias(["menu"], { key: "ContextMenu", code: "ContextMenu", keyCode: 93 });
for (let i = 1; i <= 12; i++) alias([`f${i}`], { key: `F${i}`, code: `F${i}`, keyCode: 111 + i });

// Printable characters of a US keyboard: [unshifted, shifted, code, keyCode].
const PRINTABLE: Array<[string, string, string, number]> = [
  ["`", "~", "Backquote", 192], ["-", "_", "Minus", 189], ["=", "+", "Equal", 187], ["[", "{", "BracketLeft", 219],
  ["]", "}", "BracketRight", 221], ["\\", "|", "Backslash", 220], [";", ":", "Semicolon", 186], ["'", '"', "Quote", 222],
  [",", "<", "Comma", 188], [".", ">", "Period", 190], ["/", "?", "Slash", 191],
  ["1", "!", "Digit1", 49], ["2", "@", "Digit2", 50], ["3", "#", "Digit3", 51], ["4", "$", "Digit4", 52], ["5", "%", "Digit5", 53],
  ["6", "^", "Digit6", 54], ["7", "&", "Digit7", 55], ["8", "*", "Digit8", 56], ["9", "(", "Digit9", 57], ["0", ")", "Digit0", 48],
];
const CHARS = new Map<string, KeyDefinition>();
for (const [plain, shifted, code, keyCode] of PRINTABLE) {
  CHARS.set(plain, { key: plain, code, keyCode, text: plain });
  CHARS.set(shifted, { key: shifted, code, keyCode, text: shifted });
}
for (let c = 97; c <= 122; c++) {
  const lower = String.fromCharCode(c);
  const upper = lower.toUpperCase();
  CHARS.set(lower, { key: lower, code: `Key${upper}`, keyCode: c - 32, text: lower });
  CHARS.set(upper, { key: upper, code: `Key${upper}`, keyCode: c - 32, text: upper });
}
CHARS.set(" ", NAMED.space);
CHARS.set("\n", NAMED.return);
CHARS.set("\r", NAMED.return);
CHARS.set("\t", NAMED.tab);

// xdotool's keysym names for punctuation.
const KEYSYM_CHARS: Record<string, string> = {
  minus: "-", equal: "=", plus: "+", comma: ",", period: ".", slash: "/", backslash: "\\", semicolon: ";", colon: ":",
  apostrophe: "'", quotedbl: '"', grave: "`", asciitilde: "~", bracketleft: "[", bracketright: "]", braceleft: "{",
  braceright: "}", parenleft: "(", parenright: ")", exclam: "!", at: "@", numbersign: "#", dollar: "$", percent: "%",
  asciicircum: "^", ampersand: "&", asterisk: "*", underscore: "_", bar: "|", less: "<", greater: ">", question: "?",
};

/** The key a character types, or undefined when it is not on a US keyboard (then it is inserted as text). */
export function keyForChar(ch: string): KeyDefinition | undefined {
  return CHARS.get(ch);
}

/** One xdotool key name, e.g. `Return`, `a`, `F5`, `ctrl`, `KP_Enter`, `comma`. */
export function keyForName(name: string): KeyDefinition {
  const named = NAMED[name.toLowerCase()];
  if (named) return named;
  const ch = name.length === 1 ? name : KEYSYM_CHARS[name.toLowerCase()] ?? (/^kp_\d$/i.test(name) ? name.slice(3) : undefined);
  const def = ch === undefined ? undefined : CHARS.get(ch);
  if (!def) throw new SessionError(400, "invalid_key", `Unknown key name "${name}" (use xdotool names such as ctrl+a, Return, shift+Tab)`);
  return def;
}

/** A combination such as `ctrl+shift+t`, pressed in order and released in reverse. `+` alone names the plus key. */
export function keysForCombo(combo: string): KeyDefinition[] {
  const trimmed = combo.trim();
  if (!trimmed) throw new SessionError(400, "invalid_key", "Empty key name");
  const parts = trimmed === "+" ? ["+"] : trimmed.replace(/\+\+$/, "+plus").split("+").filter(Boolean);
  return parts.map(keyForName);
}
