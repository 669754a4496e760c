// xdotool key names (`ctrl+a`, `Return`, `shift+Tab`) and typed characters, translated to CDP key definitions from
// puppeteer-core's US keyboard layout.
import type { KeyInput } from "puppeteer-core";
import { _keyDefinitions as US } from "puppeteer-core/internal/common/USKeyboardLayout.js";
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

/** CDP modifier bits (Input.dispatchKeyEvent `modifiers`) of the modifier keys. */
const MODIFIER_BITS: Record<string, number> = { Alt: 1, Control: 2, Meta: 4, Shift: 8 };

type LayoutKey = (typeof US)[KeyInput];

/** A key of puppeteer-core's US layout (the one its Keyboard types with), as a definition; `key` overrides for shifted. */
function fromLayout(d: LayoutKey, key = d.key ?? ""): KeyDefinition {
  const text = d.text ?? (key.length === 1 ? key : undefined);
  return {
    key,
    code: d.code ?? "",
    keyCode: d.keyCode ?? 0,
    ...(text !== undefined ? { text } : {}),
    ...(MODIFIER_BITS[key] ? { modifier: MODIFIER_BITS[key] } : {}),
    ...(d.location ? { location: d.location } : {}),
  };
}
const us = (code: KeyInput) => fromLayout(US[code]);

const NAMED: Record<string, KeyDefinition> = {};
const alias = (names: string[], def: KeyDefinition) => {
  for (const n of names) NAMED[n.toLowerCase()] = def;
};

alias(["ctrl", "control", "control_l", "ctrl_l"], us("ControlLeft"));
alias(["control_r", "ctrl_r"], us("ControlRight"));
alias(["shift", "shift_l"], us("ShiftLeft"));
alias(["shift_r"], us("ShiftRight"));
alias(["alt", "alt_l", "option"], us("AltLeft"));
alias(["alt_r", "altgr", "iso_level3_shift"], us("AltRight"));
alias(["super", "super_l", "meta", "meta_l", "cmd", "command", "win", "windows"], us("MetaLeft"));
alias(["super_r", "meta_r"], us("MetaRight"));
alias(["return", "enter", "kp_enter"], us("Enter"));
alias(["tab", "iso_left_tab"], us("Tab"));
alias(["escape", "esc"], us("Escape"));
alias(["backspace"], us("Backspace"));
alias(["delete", "del", "kp_delete"], us("Delete"));
alias(["insert", "ins"], us("Insert"));
alias(["home", "kp_home"], us("Home"));
alias(["end", "kp_end"], us("End"));
alias(["prior", "page_up", "pageup", "kp_prior"], us("PageUp"));
alias(["next", "page_down", "pagedown", "kp_next"], us("PageDown"));
alias(["left", "kp_left"], us("ArrowLeft"));
alias(["up", "kp_up"], us("ArrowUp"));
alias(["right", "kp_right"], us("ArrowRight"));
alias(["down", "kp_down"], us("ArrowDown"));
alias(["space"], us("Space"));
alias(["caps_lock", "capslock"], us("CapsLock"));
alias(["menu"], us("ContextMenu"));
for (let i = 1; i <= 12; i++) alias([`f${i}`], us(`F${i}` as KeyInput));

// Printable characters: the main block of the layout (entries named by their code, no numpad location), plain and shifted.
const CHARS = new Map<string, KeyDefinition>();
for (const [name, d] of Object.entries(US) as Array<[string, LayoutKey]>) {
  if (name !== d.code || d.location || d.key?.length !== 1) continue;
  CHARS.set(d.key, fromLayout(d));
  if (d.shiftKey) CHARS.set(d.shiftKey, fromLayout(d, d.shiftKey));
}
CHARS.set(" ", NAMED.space);
CHARS.set("\n", NAMED.return);
CHARS.set("\r", NAMED.return);
CHARS.set("\t", NAMED.tab);

// xdotool's keysym names for punctuation.
const KEYSYM_CHARS: Record<string, string> = {
  minus: "-",
  equal: "=",
  plus: "+",
  comma: ",",
  period: ".",
  slash: "/",
  backslash: "\\",
  semicolon: ";",
  colon: ":",
  apostrophe: "'",
  quotedbl: '"',
  grave: "`",
  asciitilde: "~",
  bracketleft: "[",
  bracketright: "]",
  braceleft: "{",
  braceright: "}",
  parenleft: "(",
  parenright: ")",
  exclam: "!",
  at: "@",
  numbersign: "#",
  dollar: "$",
  percent: "%",
  asciicircum: "^",
  ampersand: "&",
  asterisk: "*",
  underscore: "_",
  bar: "|",
  less: "<",
  greater: ">",
  question: "?",
};

/** The key a character types, or undefined when it is not on a US keyboard (then it is inserted as text). */
export function keyForChar(ch: string): KeyDefinition | undefined {
  return CHARS.get(ch);
}

/** One xdotool key name, e.g. `Return`, `a`, `F5`, `ctrl`, `KP_Enter`, `comma`. */
export function keyForName(name: string): KeyDefinition {
  const named = NAMED[name.toLowerCase()];
  if (named) return named;
  const ch = name.length === 1 ? name : (KEYSYM_CHARS[name.toLowerCase()] ?? (/^kp_\d$/i.test(name) ? name.slice(3) : undefined));
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
