// The little of oidc-provider's API the test provider uses (the package ships no types).
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http";
  interface Account {
    accountId: string;
    claims(): Promise<Record<string, unknown>>;
  }
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown> & { findAccount(ctx: unknown, id: string): Promise<Account | undefined> });
    on(event: "server_error", listener: (ctx: unknown, err: Error) => void): this;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }
}
