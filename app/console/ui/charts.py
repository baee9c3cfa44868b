"""Small line charts drawn as SVG on the server: no chart library, nothing fetched. Every
text in them goes through Jinja2's escaping (the template draws them)."""

from __future__ import annotations

from dataclasses import dataclass

WIDTH, HEIGHT, PAD = 360, 90, 4


@dataclass(frozen=True, slots=True)
class Chart:
    title: str
    points: str
    """The polyline's `x,y x,y ...`; empty when the series has no value."""
    top: str
    """The largest value, as the axis label."""
    dots: tuple[tuple[str, str], ...] = ()
    """Each value's point: a lone hour (no neighbour to draw a line to) still shows."""


def line_chart(title: str, values: list[float | None]) -> Chart:
    present = [v for v in values if v is not None]
    if not present:
        return Chart(title, "", "-")
    top = max(present) or 1.0
    step = (WIDTH - 2 * PAD) / max(1, len(values) - 1)
    dots = tuple(
        (f"{PAD + i * step:.1f}", f"{HEIGHT - PAD - (v / top) * (HEIGHT - 2 * PAD):.1f}")
        for i, v in enumerate(values)
        if v is not None
    )
    points = " ".join(f"{x},{y}" for x, y in dots)
    return Chart(title, points, f"{max(present):.4g}", dots)
