/** @jsxImportSource hono/jsx */
// Spend over time as inline SVG drawn on the server (no script, no CDN): one stacked bar per UTC day, split by kind or
// by surface, with a y axis in USD and a <title> per segment for the exact figure. Top spenders and routes as tables.
import { atomicToUsd } from "../../payments/index.js";
import type { SpendHistory } from "../spend.js";
import { href } from "./layout.js";

const W = 1100;
const H = 180;
const LEFT = 58;
const BOTTOM = 22;
const TOP = 8;

const KIND_COLOURS: Record<string, string> = { x402: "#2456c7", credits: "#7aa0f0" };
const SURFACE_COLOURS: Record<string, string> = {
  search: "#2456c7",
  fetch: "#19a38a",
  session: "#e3a21a",
  sandbox: "#b2459b",
  other: "#8a93a6",
};

/** A "nice" top for the y axis: 1, 2 or 5 × a power of ten, at least the largest day. */
function niceMax(max: bigint): bigint {
  if (max <= 0n) return 1_000_000n; // $1 when nothing was spent
  let step = 1n;
  while (step * 10n <= max) step *= 10n;
  for (const m of [1n, 2n, 5n, 10n]) if (step * m >= max) return step * m;
  return step * 10n;
}

export function HistoryChart({ history, split, label }: { history: SpendHistory; split: "kind" | "surface"; label: string }) {
  const colours = split === "kind" ? KIND_COLOURS : SURFACE_COLOURS;
  const series = Object.keys(colours);
  const values = history.days.map((d) => (split === "kind" ? d.byKind : d.bySurface) as Record<string, bigint>);
  const dayTotal = (v: Record<string, bigint>) => Object.values(v).reduce((a, b) => a + b, 0n);
  let largest = 0n;
  for (const v of values) if (dayTotal(v) > largest) largest = dayTotal(v);
  const max = niceMax(largest);
  const plotH = H - TOP - BOTTOM;
  const slot = (W - LEFT - 4) / history.days.length;
  const y = (amount: bigint) => Number((amount * BigInt(plotH * 100)) / max) / 100;
  return (
    <figure style="margin:0" data-chart={`spend-by-${split}`}>
      <svg width="100%" viewBox={`0 0 ${W} ${H}`} role="img" aria-label={label} preserveAspectRatio="xMinYMin meet">
        {[0n, max / 2n, max].map((tick) => (
          <g>
            <line x1={LEFT} x2={W} y1={TOP + plotH - y(tick)} y2={TOP + plotH - y(tick)} stroke="#e3e7ef" />
            <text x={LEFT - 6} y={TOP + plotH - y(tick) + 4} text-anchor="end">
              ${atomicToUsd(tick)}
            </text>
          </g>
        ))}
        {history.days.map((d, i) => {
          let base = TOP + plotH;
          const x = LEFT + i * slot + 1;
          return (
            <g data-day={d.day}>
              {series.map((s) => {
                const amount = values[i]![s] ?? 0n;
                if (amount <= 0n) return null;
                const h = Math.max(1, y(amount));
                base -= h;
                return (
                  <rect x={x} y={base} width={Math.max(1, slot - 2)} height={h} fill={colours[s]} data-series={s}>
                    <title>{`${d.day} ${s}: $${atomicToUsd(amount)}`}</title>
                  </rect>
                );
              })}
              {(i % 5 === 4 || i === history.days.length - 1) && (
                <text x={x + slot / 2} y={H - 6} text-anchor="middle">
                  {d.day.slice(5)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption class="muted" style="font-size:12px">
        {label}:{" "}
        {series.map((s) => (
          <span style="margin-right:10px">
            <svg width="10" height="10" aria-hidden="true">
              <rect width="10" height="10" fill={colours[s]} />
            </svg>{" "}
            {s}
          </span>
        ))}
        {history.truncated && <span> · drawn from the newest 10,000 ledger entries; older days may be incomplete</span>}
      </figcaption>
    </figure>
  );
}

export function TopTables({ history, showTenants }: { history: SpendHistory; showTenants: boolean }) {
  return (
    <div class="grid">
      {showTenants && (
        <div class="card">
          <h3>Top spenders (30 days)</h3>
          {history.topTenants.length ? (
            <table data-table="top-tenants">
              <tbody>
                {history.topTenants.map((t) => (
                  <tr data-top-tenant={t.tenant}>
                    <td>
                      <a href={href(`/tenants/${encodeURIComponent(t.tenant)}`)}>{t.tenant}</a>
                    </td>
                    <td class="num">${atomicToUsd(t.amount)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <p class="muted">No spend yet.</p>
          )}
        </div>
      )}
      <div class="card">
        <h3>Top routes (30 days)</h3>
        {history.topRoutes.length ? (
          <table data-table="top-routes">
            <tbody>
              {history.topRoutes.map((r) => (
                <tr data-top-route={r.route}>
                  <td>
                    <code>{r.route}</code>
                  </td>
                  <td class="num">{r.calls} calls</td>
                  <td class="num">${atomicToUsd(r.amount)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : (
          <p class="muted">No spend yet.</p>
        )}
      </div>
    </div>
  );
}
