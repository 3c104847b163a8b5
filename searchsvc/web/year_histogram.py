"""The year facet as histogram bars: one bar per year from the first to the last, gaps included.

Bar heights are SVG attributes computed here, not inline styles, so the page's
Content-Security-Policy can forbid inline styles and still draw them.
"""

from __future__ import annotations

from dataclasses import dataclass

from searchsvc.core.model import FacetValue

BAR_WIDTH = 10  # SVG user units per year; the picture is scaled to the sidebar's width
BAR_GAP = 1  # space either side of a drawn bar, inside its clickable column
CHART_HEIGHT = 60
_MIN_BAR = 3  # a year with one paper among thousands must still be visible and clickable


@dataclass(frozen=True)
class YearBar:
    year: int
    count: int
    selected: bool
    x: int
    y: float
    height: float


@dataclass(frozen=True)
class YearHistogram:
    bars: list[YearBar]
    bar_width: int = BAR_WIDTH
    bar_gap: int = BAR_GAP

    @property
    def width(self) -> int:
        return len(self.bars) * self.bar_width

    @property
    def height(self) -> int:
        return CHART_HEIGHT


def year_histogram(values: list[FacetValue]) -> YearHistogram:
    """Bars for every year between the earliest and latest listed, in ascending order."""
    by_year = {int(value.value): value for value in values}
    if not by_year:
        return YearHistogram([])
    tallest = max(value.count for value in values) or 1
    bars = []
    for position, year in enumerate(range(min(by_year), max(by_year) + 1)):
        value = by_year.get(year)
        count = value.count if value else 0
        height = 0.0 if count == 0 else max(_MIN_BAR, CHART_HEIGHT * count / tallest)
        bars.append(
            YearBar(
                year=year,
                count=count,
                selected=bool(value and value.selected),
                x=position * BAR_WIDTH,
                y=CHART_HEIGHT - height,
                height=height,
            )
        )
    return YearHistogram(bars)
