// The slice of the Workers runtime module the Durable Objects backend uses, for the Node typecheck (the project does
// not install @cloudflare/workers-types); workerd provides the real module at run time.
declare module "cloudflare:workers" {
  export abstract class DurableObject<Env = unknown> {
    protected ctx: unknown;
    protected env: Env;
    constructor(ctx: unknown, env: Env);
  }
}
