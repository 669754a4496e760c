// The computer-action request bodies of the upstream (one object, discriminated by `action`), validated.
import * as z from "zod";
import { SessionError } from "./session-error.js";
import { describeIssue } from "./session-params.js";

const coord = z.number().finite();
const button = z.enum(["left", "right", "middle", "back", "forward", "wheel"]).default("left");
const shot = { returnScreenshot: z.boolean().optional() };

export const computerActionBody = z.discriminatedUnion("action", [
  z.object({
    action: z.literal("click"),
    x: coord.optional(),
    y: coord.optional(),
    button,
    numClicks: z.number().int().min(1).max(10).default(1),
    ...shot,
  }),
  z.object({ action: z.literal("type_text"), text: z.string(), ...shot }),
  z.object({ action: z.literal("press_keys"), keys: z.array(z.string().min(1)).min(1), ...shot }),
  z.object({ action: z.literal("move_mouse"), x: coord, y: coord, ...shot }),
  z.object({ action: z.literal("drag"), path: z.array(z.object({ x: coord, y: coord })).min(2), ...shot }),
  z.object({ action: z.literal("scroll"), x: coord, y: coord, scrollX: coord.default(0), scrollY: coord.default(0), ...shot }),
  z.object({ action: z.literal("screenshot"), ...shot }),
  // Seconds, as xdotool's sleep between keydown and keyup.
  z.object({ action: z.literal("hold_key"), key: z.string().min(1), duration: z.number().min(0).max(60), ...shot }),
  z.object({ action: z.literal("mouse_down"), button, ...shot }),
  z.object({ action: z.literal("mouse_up"), button, ...shot }),
  z.object({ action: z.literal("get_clipboard_text"), ...shot }),
  z.object({ action: z.literal("put_selection_text"), text: z.string(), ...shot }),
  z.object({ action: z.literal("list_windows"), ...shot }),
]);

export type ComputerActionBody = z.infer<typeof computerActionBody>;
export type MouseButtonName = z.infer<typeof button>;

export function parseComputerAction(body: unknown): ComputerActionBody {
  const parsed = computerActionBody.safeParse(body);
  if (!parsed.success) throw new SessionError(400, "invalid_action", `Invalid computer action: ${describeIssue(parsed.error)}`);
  return parsed.data;
}
