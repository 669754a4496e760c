// The runtime's presign-upload/-download answer: `{ token, path, method, expiresAt, url }`.
import * as z from "zod";
import { lenient } from "../upstream/records.js";

export const PresignAnswer = z.looseObject({
  url: lenient(z.string()),
  token: lenient(z.string()),
  path: lenient(z.string()),
  method: lenient(z.string()),
  /** Epoch ms (number) or an ISO date. */
  expiresAt: lenient(z.union([z.number(), z.string()])),
});
export type PresignAnswer = z.infer<typeof PresignAnswer>;
