"""The server-drawn charts of /stats/: round axes, and a day without calls is a gap, never a zero."""

from datetime import date, timedelta

import pytest

from stats.charts import bar_chart, line_chart, y_scale

DAYS = [date(2026, 3, 1) + timedelta(days=i) for i in range(4)]


@pytest.mark.parametrize(
    "largest, whole, top",
    [(0, True, 4), (3, True, 4), (37, True, 40), (0.3, False, 0.4), (31, False, 40), (1234, False, 2000)],
)
def test_the_y_axis_ends_on_a_round_number(largest, whole, top):
    assert y_scale(largest, whole=whole) == pytest.approx(top)


def test_counts_get_whole_ticks():
    chart = bar_chart(title="calls", days=DAYS, values=[3, 0, 1, 2], unit="calls")
    assert [t.label for t in chart.y_ticks] == ["0", "1", "2", "3", "4"]
    assert [b.title for b in chart.bars][0] == "2026-03-01: 3 calls"
    assert chart.bars[1].height == 0 and chart.bars[0].height == pytest.approx(
        3 / 4 * (chart.bottom - chart.top), abs=0.1
    )


def test_a_day_without_a_value_breaks_the_line():
    chart = line_chart(title="rate", days=DAYS, percent=True, series=[("rate", "line-rate", [1.0, None, 0.5, 0.25])])
    line = chart.lines[0]
    assert len(line.segments) == 2 and len(line.points) == 3  # 1 Mar alone, then 3-4 Mar
    assert [p.title for p in line.points] == [
        "2026-03-01: rate 100.0 %",
        "2026-03-03: rate 50.0 %",
        "2026-03-04: rate 25.0 %",
    ]
    assert [t.label for t in chart.y_ticks] == ["0 %", "25 %", "50 %", "75 %", "100 %"]
    assert line.points[0].y == chart.top and line.points[1].y == pytest.approx((chart.top + chart.bottom) / 2)


def test_x_labels_thin_out_on_long_periods():
    days = [date(2026, 1, 1) + timedelta(days=i) for i in range(90)]
    chart = bar_chart(title="calls", days=days, values=[1] * 90, unit="calls")
    assert 2 <= len(chart.x_ticks) <= 8 and chart.x_ticks[0].label == "1 Jan"
