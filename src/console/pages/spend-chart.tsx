/** @jsxImportSource hono/jsx */
// Spend against each budget window as inline SVG bars, drawn on the server: x402 and credits stacked, the limit as the
// full track (a window without a limit is scaled to the largest spend shown).
import { atomicToUsd } from "../../payments/index.js";
import type { WindowSpend } from "../spend.js";

const W = 320;
const ROW = 34;
const LABEL = 64;
const BAR = W - LABEL - 8;

const pct = (spent: bigint, limit: bigint) => (limit > 0n ? Number((spent * 1000n) / limit) / 10 : 0);

export function SpendChart({ windows }: { windows: WindowSpend[] }) {
  // A window without a limit is drawn on the scale of the largest limit shown (or of the largest spend, if none has one).
  const bigger = (a: bigint, b: bigint) => (a > b ? a : b); // Math.max does not take bigints
  const fallback = windows.reduce((m, x) => (x.limit !== undefined && x.limit > m ? x.limit : bigger(x.spent, m)), 1n);
  const scale = (w: WindowSpend) => (w.limit && w.limit > 0n ? w.limit : fallback);
  const width = (amount: bigint, w: WindowSpend) => {
    if (amount <= 0n) return 0;
    // Any spend at all stays visible, however small beside its limit.
    return Math.max(2, Math.min(BAR, Number((amount * BigInt(BAR * 100)) / scale(w)) / 100));
  };
  return (
    <svg
      width={W}
      height={windows.length * ROW + 4}
      viewBox={`0 0 ${W} ${windows.length * ROW + 4}`}
      role="img"
      aria-label="spend per budget window"
    >
      {windows.map((w, i) => {
        const y = i * ROW + 2;
        const x402 = width(w.x402, w);
        const credits = Math.min(BAR - x402, width(w.credits, w));
        const over = w.limit !== undefined && w.spent >= w.limit && w.limit > 0n;
        const caption =
          w.limit !== undefined
            ? `$${atomicToUsd(w.spent)} of $${atomicToUsd(w.limit)} (${pct(w.spent, w.limit)}%)`
            : `$${atomicToUsd(w.spent)} · no limit`;
        return (
          <g data-window={w.window}>
            <text x={0} y={y + 13}>
              {w.window}
            </text>
            <rect
              x={LABEL}
              y={y + 2}
              width={BAR}
              height={14}
              rx={3}
              fill={w.limit !== undefined ? "#e6eaf2" : "#f7f8fa"}
              stroke={w.limit !== undefined ? "none" : "#c9cfdb"}
              stroke-dasharray="4 3"
            />
            <rect x={LABEL} y={y + 2} width={x402} height={14} rx={3} fill={over ? "#c8323c" : "#2456c7"} />
            <rect x={LABEL + x402} y={y + 2} width={credits} height={14} fill={over ? "#e07b82" : "#7aa0f0"} />
            <text x={LABEL} y={y + 30} class="caption">
              {caption}
            </text>
          </g>
        );
      })}
    </svg>
  );
}

export function ChartKey() {
  return (
    <p class="muted" style="font-size:12px;margin:4px 0 0">
      <svg width="10" height="10" aria-hidden="true">
        <rect width="10" height="10" fill="#2456c7" />
      </svg>{" "}
      x402 payments{" "}
      <svg width="10" height="10" aria-hidden="true">
        <rect width="10" height="10" fill="#7aa0f0" />
      </svg>{" "}
      upstream credits
    </p>
  );
}
