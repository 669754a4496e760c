/** @jsxImportSource hono/jsx */
// The console's Sales page (operators only): per wallet buyer what it paid the gateway, what the gateway paid the
// upstream for it, the margin, its calls and last purchase (src/sales/buyers.ts, as GET /_tollgate/admin/sales), and
// the reconciler's last check of the inbound books against the chain.
import { GatewayError } from "../../errors.js";
import { buyerSummaries } from "../../sales/buyers.js";
import type { GatewayServices } from "../../services.js";
import { type Pages, render } from "../kit.js";
import { SalesPage } from "../pages/sales.js";

export function salesPages(services: GatewayServices): Pages {
  return {
    "console.sales": async (c) => {
      const viewer = c.get("viewer");
      if (viewer.role === "tenant") throw new GatewayError(404, "not_found", "There is no such console page.");
      const sold = services.sales;
      const buyers = sold ? await buyerSummaries(services, await sold.book.list()) : [];
      return render(
        c,
        <SalesPage
          viewer={viewer}
          nonce={c.get("nonce")}
          enabled={!!sold}
          buyers={buyers.reverse()}
          inbound={sold ? await sold.inbound.lastAnywhere() : undefined}
        />,
      );
    },
  };
}
