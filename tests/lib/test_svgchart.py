"""A chart's frame (`lib.svgchart.Frame`): the plot inside its margins, where a share of each
axis falls, and where the axes' titles go; the reliability diagram and the policy simulator's
trade-off chart draw in one each. Expected figures are worked out by hand from the geometry."""

from __future__ import annotations

from agreement.simulation import chart
from lib.svgchart import Frame
from raters.calibration import diagram

# The reliability diagram's frame: 300 x 300, margins 46 left, 12 right, 12 top, 46 bottom.
SQUARE = Frame(300, 300, margin_left=46, margin_right=12, margin_top=12, margin_bottom=46)


def test_the_plot_sits_inside_the_margins_and_shares_fall_between_its_edges():
    assert (SQUARE.left, SQUARE.right, SQUARE.top, SQUARE.bottom) == (46, 288, 12, 254)
    assert (SQUARE.plot_width, SQUARE.plot_height) == (242, 242)
    # x: 0 at the left edge, 1 at the right; y: 0 at the bottom edge, 1 at the top.
    assert [SQUARE.x(s) for s in (0, 0.5, 1)] == [46.0, 167.0, 288.0]
    assert [SQUARE.y(s) for s in (0, 0.25, 1)] == [254.0, 193.5, 12.0]
    assert SQUARE.x(0.7) == 215.4  # 46 + 169.4, to a tenth


def test_the_axes_titles_are_centred_on_the_plot():
    assert SQUARE.axes() == {
        "width": 300,
        "height": 300,
        "left": 46,
        "right": 288,
        "top": 12,
        "bottom": 254,
        "x_title_x": 167.0,  # 46 + 242 / 2
        "x_title_y": 292,  # 8 above the drawing's bottom
        "y_title_y": 133.0,  # 12 + 242 / 2
    }


def test_the_reliability_diagram_draws_its_bars_in_its_frame():
    # One bin, (0.7, 0.8]: 4 labels, mean confidence 0.75, right half the time.
    drawn = diagram([(0.7, 0.8, 4, 0.75, 0.5)])
    assert {k: drawn[k] for k in ("width", "height", "left", "right", "top", "bottom")} == {
        "width": 300,
        "height": 300,
        "left": 46,
        "right": 288,
        "top": 12,
        "bottom": 254,
    }
    [bar] = drawn["bars"]
    # From x 215.4 (0.7) to 239.6 (0.8), a pixel in from each; up from 254 to 133 (0.5).
    assert (bar["x"], bar["width"]) == (216.4, 22.2)
    assert (bar["y"], bar["height"], bar["mark_y"]) == (133.0, 121.0, 72.5)
    assert [t["y"] for t in drawn["y_ticks"]] == [254.0, 205.6, 157.2, 108.8, 60.4, 12.0]


def test_the_trade_off_chart_spreads_one_to_k_labels_across_its_frame():
    # 640 x 360, margins 60 left, 20 right, 20 top, 48 bottom: a plot 560 x 292.
    points = [
        {"series": "fixed", "labels": 1, "same_final": 0.62},
        {"series": "fixed", "labels": 3, "same_final": 1.0},
    ]
    drawn = chart({"points": points, "k": 3})
    assert (drawn["left"], drawn["right"], drawn["top"], drawn["bottom"]) == (60, 620, 20, 312)
    assert (drawn["x_title_x"], drawn["x_title_y"], drawn["y_title_y"]) == (340.0, 352, 166.0)
    assert [t["x"] for t in drawn["x_ticks"]] == [60.0, 340.0, 620.0]
    # The y axis starts at 60 %, the tenth below the lowest point: 62 % is 1/20 of the way up.
    first, last = drawn["points"]
    assert (first["x"], first["y"], last["x"], last["y"]) == (60.0, 297.4, 620.0, 20.0)
