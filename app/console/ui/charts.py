"""Small bar charts drawn as SVG on the server: no chart library, nothing fetched. One bar an
hour, so a single busy hour reads as plainly as a full day (a line through mostly-empty hours
showed only a lone dot). Every text in them goes through Jinja2's escaping (the template
draws them)."""

from __future__ import annotations

from dataclasses import dataclass

WIDTH, HEIGHT, PAD = 360, 90, 4


@dataclass(frozen=True, slots=True)
class Bar:
    x: str
    y: str
    width: str
    height: str
    label: str
    """What hovering shows: the hour and the value."""


@dataclass(frozen=True, slots=True)
class Chart:
    title: str
    bars: tuple[Bar, ...]
    """Empty when the series has no value."""
    top: str
    """The largest value, as the axis label."""


def bar_chart(title: str, values: list[float | None], scale: float | None = None) -> Chart:
    """`scale`: the value of a full bar (100 for a share in %, so 40 % is not drawn full);
    None: the series' largest value."""
    present = [v for v in values if v is not None]
    if not present:
        return Chart(title, (), "-")
    top = scale or max(present) or 1.0
    slot = (WIDTH - 2 * PAD) / max(1, len(values))
    usable = HEIGHT - 2 * PAD
    bars = []
    for i, value in enumerate(values):
        if not value:  # no data, or a zero: the axis alone
            continue
        height = max(1.0, value / top * usable)
        ago = len(values) - 1 - i
        when = "this hour" if ago == 0 else f"{ago} h ago"
        bars.append(
            Bar(
                f"{PAD + i * slot + 1:.1f}",
                f"{HEIGHT - PAD - height:.1f}",
                f"{max(1.0, slot - 2):.1f}",
                f"{height:.1f}",
                f"{when}: {value:.4g}",
            )
        )
    return Chart(title, tuple(bars), f"{max(present):.4g}" if scale is None else f"of {scale:g}")
