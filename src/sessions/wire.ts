// The upstream's browser session records: Session (list entries) and SessionDetail (with its endpoints and token).
import * as z from "zod";
import { lenient } from "../upstream/records.js";

export const SessionDetail = z.looseObject({
  id: lenient(z.union([z.string(), z.number()])),
  status: lenient(z.string()),
  sessionUrl: lenient(z.string().nullable()),
  wsEndpoint: lenient(z.string().nullable()),
  computerActionEndpoint: lenient(z.string().nullable()),
  webdriverEndpoint: lenient(z.string().nullable()),
  liveUrl: lenient(z.string().nullable()),
  liveDomain: lenient(z.string().nullable()),
  token: lenient(z.string().nullable()),
  /** How the session was launched; the gateway reads viewOnlyLiveView (its live view then forwards no input). */
  launchState: lenient(z.looseObject({ viewOnlyLiveView: lenient(z.boolean()) }).nullable()),
});
export type SessionDetail = z.infer<typeof SessionDetail>;

/** What `POST /x402/session` sells: the session's detail plus the `managementToken` the gateway keeps to itself. */
export const X402SessionAnswer = SessionDetail.extend({ managementToken: lenient(z.string()) });
