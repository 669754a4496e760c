/** @jsxImportSource hono/jsx */
// Sales (docs/sales.md): each wallet buyer — what it paid (inbound), what the gateway paid the upstream for it
// (outbound), the margin, its calls and last purchase, a link to its wallet tenant — and the inbound reconciliation.
import type { BuyerSummary } from "../../sales/buyers.js";
import type { InboundCheck } from "../../sales/reconcile.js";
import { href, Page, type Viewer } from "./layout.js";

export function SalesPage(props: { viewer: Viewer; nonce: string; enabled: boolean; buyers: BuyerSummary[]; inbound?: InboundCheck }) {
  const { buyers, inbound } = props;
  return (
    <Page title="Sales" viewer={props.viewer} active="/sales" nonce={props.nonce}>
      <h1>Sales</h1>
      {!props.enabled ? (
        <p data-sales="off">
          Selling is off: add <code>[sales]</code> to the config to let clients holding only a wallet buy calls (docs/sales.md).
        </p>
      ) : buyers.length === 0 ? (
        <p data-sales="none">No wallet has bought anything yet.</p>
      ) : (
        <table data-sales="buyers">
          <thead>
            <tr>
              <th>Buyer (wallet tenant)</th>
              <th>Wallet</th>
              <th class="num">Calls</th>
              <th class="num">Inbound</th>
              <th class="num">Outbound</th>
              <th class="num">Margin</th>
              <th>Last purchase</th>
            </tr>
          </thead>
          <tbody>
            {buyers.map((b) => (
              <tr data-buyer={b.tenant}>
                <td>
                  <a href={href(`/tenants/${encodeURIComponent(b.tenant)}`)} data-buyer-link>
                    <code>{b.tenant}</code>
                  </a>
                </td>
                <td>
                  <code>{b.payer}</code>
                </td>
                <td class="num" data-calls>
                  {b.sales}
                </td>
                <td class="num" data-inbound>
                  ${b.inbound}
                </td>
                <td class="num" data-outbound>
                  ${b.outbound}
                </td>
                <td class="num" data-margin>
                  ${b.margin}
                </td>
                <td data-last>{b.lastPurchase.replace("T", " ").slice(0, 19)} UTC</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {props.enabled && (
        <p class="muted" data-inbound-check={inbound ? (inbound.mismatches.length ? "mismatch" : "matched") : "not-yet"}>
          {inbound
            ? `Inbound against the chain (the reconciler's last pass, ${inbound.at}): ${inbound.matched} confirmed, ${inbound.mismatches.length} not on chain, ${inbound.unchecked} not checkable (no RPC).`
            : "The reconciler has not checked the inbound books against the chain yet."}{" "}
          Outbound is the wallet tenant's committed ledger spend (x402 on chain, or credits); margin is inbound − outbound.
        </p>
      )}
    </Page>
  );
}
