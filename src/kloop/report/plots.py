"""Inline SVG line charts: no scripts, no fonts to fetch, readable when printed.

One chart function: series of (x, y) points drawn as step lines (best so far) with optional
markers (each measured round, filled when accepted), axes with a few ticks, a legend.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

W, H, PAD_L, PAD_B, PAD_T, PAD_R = 640, 240, 52, 34, 14, 120
COLOURS = ["#2a6fdb", "#d9534f", "#2e9e5b", "#9b59b6", "#e67e22", "#16a2b8", "#7f8c8d"]


@dataclass
class Series:
    name: str
    points: list[tuple[float, float]]
    marks: list[tuple[float, float, bool]] = field(default_factory=list)  # x, y, accepted


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    if hi <= lo:
        return [lo]
    step = (hi - lo) / n
    return [lo + i * step for i in range(n + 1)]


def line_chart(title: str, series: list[Series], x_label: str, y_label: str, chart_id: str) -> str:
    """An SVG chart; an empty chart says so instead of drawing nothing."""
    xs = [x for s in series for x, _ in s.points] + [x for s in series for x, _, _ in s.marks]
    ys = [y for s in series for _, y in s.points] + [y for s in series for _, y, _ in s.marks]
    if not xs:
        return f'<p class="muted" id="{chart_id}">{escape(title)}: nothing measured yet.</p>'
    x0 = min(0.0, min(xs))
    x1 = max(xs) if max(xs) > x0 else x0 + 1
    y0, y1 = min(0.0, min(ys)), max(ys) * 1.1 if max(ys) > 0 else 1.0

    def px(x: float) -> float:
        return PAD_L + (x - x0) / (x1 - x0) * (W - PAD_L - PAD_R)

    def py(y: float) -> float:
        return H - PAD_B - (y - y0) / (y1 - y0) * (H - PAD_B - PAD_T)

    parts = [f'<svg id="{chart_id}" class="chart" viewBox="0 0 {W} {H}" role="img" aria-label="{escape(title)}">',
             f"<title>{escape(title)}</title>",
             f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - PAD_R}" y2="{H - PAD_B}" class="axis"/>',
             f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{H - PAD_B}" class="axis"/>']
    for t in _ticks(y0, y1):
        parts.append(f'<line x1="{PAD_L - 4}" y1="{py(t):.1f}" x2="{W - PAD_R}" y2="{py(t):.1f}" class="grid"/>'
                     f'<text x="{PAD_L - 6}" y="{py(t) + 4:.1f}" text-anchor="end">{_label(t)}</text>')
    whole = all(float(x).is_integer() for x in xs) and x1 - x0 <= 40
    x_ticks = [float(t) for t in range(int(x0), int(x1) + 1, max(1, int(x1 - x0) // 8 or 1))] if whole else _ticks(x0, x1)
    for t in x_ticks:
        parts.append(f'<text x="{px(t):.1f}" y="{H - PAD_B + 16}" text-anchor="middle">{_label(t)}</text>')
    parts.append(f'<text x="{(PAD_L + W - PAD_R) / 2:.0f}" y="{H - 4}" text-anchor="middle">{escape(x_label)}</text>')
    parts.append(f'<text x="12" y="{PAD_T + 4}" transform="rotate(-90 12 {PAD_T + 4})" text-anchor="end">'
                 f"{escape(y_label)}</text>")
    for i, s in enumerate(series):
        colour = COLOURS[i % len(COLOURS)]
        path = _step_path([(px(x), py(y)) for x, y in s.points])
        if path:
            parts.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y, ok in s.marks:
            fill = colour if ok else "#fff"
            parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{fill}" stroke="{colour}"/>')
        ly = PAD_T + 14 + i * 16
        parts.append(f'<rect x="{W - PAD_R + 10}" y="{ly - 9}" width="10" height="10" fill="{colour}"/>'
                     f'<text x="{W - PAD_R + 24}" y="{ly}">{escape(s.name[:16])}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _label(value: float) -> str:
    """A tick label without scientific notation for the ranges a run has (rounds, seconds, minutes)."""
    return f"{value:.0f}" if abs(value - round(value)) < 1e-9 or abs(value) >= 10 else f"{value:.1f}"


def _step_path(points: list[tuple[float, float]]) -> str:
    if not points:
        return ""
    out = [f"M{points[0][0]:.1f},{points[0][1]:.1f}"]
    for (_, y0), (x1, y1) in zip(points, points[1:], strict=False):
        out.append(f"H{x1:.1f}V{y1:.1f}")
        del y0
    return "".join(out)
