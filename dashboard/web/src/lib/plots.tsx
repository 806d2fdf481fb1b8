// Hand-made SVG plots: a line over time and horizontal bars. No chart
// library: these two shapes are all the dashboard draws.

const W = 460;
const H = 160;
const PAD = 32;

export type Point = { x: number; y: number };

/** A line (or several) over time; x in epoch milliseconds. */
export function LinePlot({
  title,
  unit,
  series,
}: {
  title: string;
  unit: string;
  series: { name: string; points: Point[]; color: string }[];
}) {
  const all = series.flatMap((s) => s.points);
  if (all.length === 0) {
    return (
      <figure>
        <figcaption>{title}</figcaption>
        <p className="note">No data yet.</p>
      </figure>
    );
  }
  const x0 = Math.min(...all.map((p) => p.x));
  const x1 = Math.max(...all.map((p) => p.x), x0 + 1);
  const y1 = Math.max(...all.map((p) => p.y), 1);
  const sx = (x: number) => PAD + ((x - x0) / (x1 - x0)) * (W - 2 * PAD);
  const sy = (y: number) => H - PAD - (y / y1) * (H - 2 * PAD);
  const time = (x: number) => new Date(x).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return (
    <figure>
      <figcaption>{title}</figcaption>
      <svg width={W} height={H} role="img" aria-label={title}>
        <line x1={PAD} y1={H - PAD} x2={W - PAD} y2={H - PAD} stroke="#8c959f" />
        <line x1={PAD} y1={PAD} x2={PAD} y2={H - PAD} stroke="#8c959f" />
        <text x={2} y={PAD} fontSize="10">{`${round(y1)} ${unit}`}</text>
        <text x={2} y={H - PAD} fontSize="10">0</text>
        <text x={PAD} y={H - 8} fontSize="10">{time(x0)}</text>
        <text x={W - PAD - 30} y={H - 8} fontSize="10">{time(x1)}</text>
        {series.map((s) => (
          <g key={s.name}>
            <polyline
              fill="none"
              stroke={s.color}
              strokeWidth={2}
              points={s.points.map((p) => `${sx(p.x)},${sy(p.y)}`).join(" ")}
            />
            {s.points.map((p) => (
              <circle key={p.x} cx={sx(p.x)} cy={sy(p.y)} r={2.5} fill={s.color}>
                <title>{`${s.name} ${time(p.x)}: ${round(p.y)} ${unit}`}</title>
              </circle>
            ))}
          </g>
        ))}
      </svg>
      <div>
        {series.map((s) => (
          <span key={s.name} style={{ color: s.color, marginRight: "1rem" }}>
            ■ {s.name}
          </span>
        ))}
      </div>
    </figure>
  );
}

/** Used out of total, one bar each. */
export function UsageBars({
  title,
  bars,
}: {
  title: string;
  bars: { label: string; used: number; total: number; unit: string }[];
}) {
  const rowH = 22;
  const labelW = 150;
  const barW = W - labelW - 90;
  return (
    <figure>
      <figcaption>{title}</figcaption>
      <svg width={W} height={Math.max(bars.length, 1) * rowH + 4} role="img" aria-label={title}>
        {bars.map((b, i) => {
          const share = b.total > 0 ? Math.min(b.used / b.total, 1) : 0;
          const y = i * rowH + 2;
          return (
            <g key={b.label}>
              <text x={0} y={y + 14} fontSize="11">{b.label}</text>
              <rect x={labelW} y={y} width={barW} height={rowH - 6} fill="#eaeef2" />
              <rect x={labelW} y={y} width={barW * share} height={rowH - 6} fill={share > 0.85 ? "#cf222e" : "#2da44e"} />
              <text x={labelW + barW + 6} y={y + 14} fontSize="11">
                {`${round(b.used)}/${round(b.total)} ${b.unit}`}
              </text>
            </g>
          );
        })}
      </svg>
    </figure>
  );
}

function round(n: number): string {
  return n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2);
}
