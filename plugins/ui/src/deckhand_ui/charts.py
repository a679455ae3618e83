"""Bar charts as inline SVG, drawn on the server: nothing to vendor, nothing run in the browser."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape


@dataclass(frozen=True)
class Bar:
    group: str
    series: str
    value: float  # 0..1


COLOURS = ("#2f6fb3", "#d9822b", "#3a9b5a", "#a64ca6")


def bars(values: list[Bar], *, width: int = 520, height: int = 220) -> str:
    """Grouped bars of values in [0, 1], one group per metric and one colour per series, with a legend."""
    groups = list(dict.fromkeys(b.group for b in values))
    series = list(dict.fromkeys(b.series for b in values))
    if not groups or not series:
        return ""
    top, bottom, left = 20, 40, 40
    plot_h = height - top - bottom
    group_w = (width - left) / len(groups)
    bar_w = group_w * 0.7 / len(series)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{width}" '
        f'height="{height + 20 * len(series)}" '
        f'aria-label="{escape(", ".join(f"{b.series} {b.group} {b.value:.3f}" for b in values))}">'
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_h * (1 - tick)
        parts.append(f'<line x1="{left}" x2="{width}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{tick:.2f}</text>')
    for g, group in enumerate(groups):
        x0 = left + g * group_w + group_w * 0.15
        for s, name in enumerate(series):
            value = next((b.value for b in values if b.group == group and b.series == name), None)
            if value is None:
                continue
            v = min(max(value, 0.0), 1.0)
            x, h = x0 + s * bar_w, plot_h * v
            parts.append(
                f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w * 0.9:.1f}" height="{h:.1f}" '
                f'fill="{COLOURS[s % len(COLOURS)]}"><title>{escape(name)} {escape(group)}: {value:.3f}</title></rect>'
            )
            parts.append(
                f'<text x="{x + bar_w * 0.45:.1f}" y="{top + plot_h - h - 4:.1f}" text-anchor="middle" '
                f'font-size="11">{value:.2f}</text>'
            )
        parts.append(
            f'<text x="{left + g * group_w + group_w / 2:.1f}" y="{top + plot_h + 18}" text-anchor="middle" '
            f'font-size="12">{escape(group)}</text>'
        )
    for s, name in enumerate(series):
        y = height + 20 * s
        parts.append(f'<rect x="{left}" y="{y - 10}" width="12" height="12" fill="{COLOURS[s % len(COLOURS)]}"/>')
        parts.append(f'<text x="{left + 18}" y="{y}" font-size="12">{escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)
