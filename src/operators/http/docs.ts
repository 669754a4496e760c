// GET /_tollgate/docs: the OpenAPI document as a browsable page (Swagger UI), its assets served by the gateway itself
// from the swagger-ui-dist package (no CDN). The runtime hands the asset reader in: the Node entry reads node_modules;
// where none is given (Workers), the page answers 404 docs_unavailable and /_tollgate/openapi.json stays the reference.
import { GatewayError } from "../../errors.js";
import type { Handlers } from "../../routing/handlers.js";

/** Reads one file of the swagger-ui-dist package, or undefined when it has none by that name. */
export type DocsAssets = (name: string) => Promise<Uint8Array | undefined>;

const ASSETS: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png",
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Tollgate API</title>
<link rel="stylesheet" href="docs/swagger-ui.css">
<link rel="icon" type="image/png" href="docs/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/init.js"></script>
</body>
</html>
`;

/** Started by a file of its own, so the page needs no inline script (a strict Content-Security-Policy holds). */
const INIT = `window.ui = SwaggerUIBundle({ url: "openapi.json", dom_id: "#swagger-ui", deepLinking: true, validatorUrl: null });\n`;

const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'";

/** The docs rows (src/routing/own-rows.ts), open to anyone. */
export function docsHandlers(assets: DocsAssets | undefined): Handlers {
  const unavailable = () => {
    throw new GatewayError(404, "docs_unavailable", "The docs page is served by the Node gateway; read /_tollgate/openapi.json.");
  };
  return {
    "own.docs": (c) => {
      if (!assets) unavailable();
      return c.html(PAGE, 200, { "content-security-policy": CSP, "cache-control": "no-cache" });
    },
    "own.docs.init": (c) => c.body(INIT, 200, { "content-type": "text/javascript; charset=utf-8" }),
    "own.docs.asset": async (c) => {
      const name = c.req.param("asset") ?? "";
      const type = ASSETS[name];
      const bytes = type && assets ? await assets(name) : undefined;
      if (!type || !bytes) throw new GatewayError(404, "not_found", `No docs asset ${name}.`);
      return c.body(bytes as Uint8Array<ArrayBuffer>, 200, { "content-type": type, "cache-control": "public, max-age=86400" });
    },
  };
}
