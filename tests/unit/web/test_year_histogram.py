"""The search page's year chart: a bar for every year in the range, each one visible."""

from __future__ import annotations

from searchsvc.core.model import FacetValue
from searchsvc.web.year_histogram import CHART_HEIGHT, year_histogram


def test_year_histogram_spans_every_year_with_visible_bars() -> None:
    chart = year_histogram([FacetValue(2021, 100, False), FacetValue(2018, 1, True), FacetValue(2019, 50, False)])
    assert [(bar.year, bar.count, bar.selected) for bar in chart.bars] == [
        (2018, 1, True),
        (2019, 50, False),
        (2020, 0, False),
        (2021, 100, False),
    ]
    heights = [bar.height for bar in chart.bars]
    assert heights[3] == CHART_HEIGHT and heights[1] == CHART_HEIGHT / 2 and heights[2] == 0
    assert 0 < heights[0] < heights[1]  # one paper among a hundred still shows
    assert all(bar.y + bar.height == CHART_HEIGHT for bar in chart.bars)  # four bars, checked above
    assert year_histogram([]).bars == []
