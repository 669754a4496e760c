// The HTTP status an SDK call ended with: 200 when it resolved, else the HyperbrowserError's statusCode.
import type { HyperbrowserError } from "@hyperbrowser/sdk";

export async function statusOf(p: Promise<unknown>): Promise<number | undefined> {
  try {
    await p;
    return 200;
  } catch (err) {
    return (err as HyperbrowserError).statusCode;
  }
}
