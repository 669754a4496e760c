// The names of the route handlers, one registry for the whole table: a row's `handler` (./row.ts) is one of these, so a
// row naming a handler that does not exist fails to compile; the surfaces implement them (`Handlers`, ./handlers.ts)
// and src/gateway.ts assembles them in one object (the console's own pages: src/console/routes.tsx).
// biome-ignore format: one surface per line
export const HANDLER_NAMES = [
  "own.health", "own.whoami", "own.ready", "own.metrics", "own.openapi", "own.docs", "own.docs.init", "own.docs.asset", "own.usage", "own.ledger", "own.tokens.mint", "own.tokens.revokeByToken", "own.tokens.revoke",
  "admin.usage", "admin.usage.export", "admin.credits.calibrate", "admin.consoleLink", "admin.tenants.list", "admin.tenants.create", "admin.tenants.get", "admin.tenants.patch", "admin.tenants.section", "admin.tenants.disable", "admin.tenants.enable", "admin.tenants.delete", "admin.keys.create", "admin.keys.rotate", "admin.keys.revoke", "admin.keys.expire", "admin.audit", "admin.ledger", "admin.sales", "own.x402.discovery", "admin.webhooks",
  "admin.config.export", "admin.config.diff", "admin.config.apply", "admin.config.drift", "console.config", "console.sales",
  "console.login.page", "console.login", "console.oidc.login", "console.oidc.callback", "console.link.page", "console.link", "console.logout", "console.overview", "console.tenants.create", "console.tenant", "console.tenant.settings", "console.tenant.enabled", "console.ledger", "console.ledger.csv", "console.resources", "console.resources.stop", "console.keys", "console.keys.create", "console.keys.rotate", "console.keys.revoke", "console.tokens", "console.tokens.mint", "console.tokens.revoke", "console.grants", "console.grants.revoke", "console.audit", "console.notFound",
  "mcp.metadata", "mcp",
  "oauth.metadata", "oauth.register", "oauth.authorize.page", "oauth.authorize", "oauth.token", "oauth.revoke", "own.grants", "own.grants.revoke", "admin.grants", "admin.grants.revoke", "admin.grants.revokePerson",
  "own.requests", "own.requests.get", "admin.requests", "console.requests",
  "own.secrets.list", "own.secrets.get", "own.secrets.put", "own.secrets.delete", "admin.secrets.list", "admin.secrets.get", "admin.secrets.put", "admin.secrets.delete", "egress", "console.secrets", "console.secrets.put", "console.secrets.delete",
  "paid.search",
  "job.start", "job.read",
  "task.start",
  "session.create", "session.list", "session.activeCount", "session.get", "session.stop", "session.snapshot", "session.fileUrl", "session.file",
  "forward",
  "refuse",
  "cdp.computerAction", "cdp.connect",
  "live.page", "live.socket",
  "x402session.create", "x402session.get", "x402session.stop",
  "owned.create", "owned.list",
  "sandbox.create", "sandbox.list", "sandbox.get", "sandbox.stop", "sandbox.snapshot", "sandbox.expose", "sandbox.network",
  "snapshot.list", "snapshot.byIdOrName",
  "volume.create", "volume.list", "volume.byKey",
  "runtime.forward", "runtime.secretEnv", "runtime.websocket", "runtime.presign", "runtime.presigned",
] as const;

/** A route handler's name: what a row's `handler` may say. */
export type HandlerName = (typeof HANDLER_NAMES)[number];
