"""The frame of a chart drawn server-side as SVG: its size, the margins around the plot, where a
share of each axis falls, and where the axes' titles go.

Charts are drawn with presentation attributes only (the CSP forbids inline styles), their
colours CSS classes; a template reads the coordinates a chart's function computes. The
reliability diagram (`raters.calibration.diagram`) and the policy simulator's trade-off chart
(`agreement.simulation.chart`) draw in a `Frame`'s `axes()` with its `x` and `y`; the
dashboard's line charts (`labeling.dashboard`) take their edges from one.
"""

from __future__ import annotations

from dataclasses import dataclass

# The x axis's title sits this far above the drawing's bottom edge.
TITLE_FROM_BOTTOM = 8


@dataclass(frozen=True)
class Frame:
    """A drawing `width` x `height` (SVG user units; CSS scales it) with the plot inside the
    four margins. `left`, `right`, `top` and `bottom` are the plot's edges."""

    width: int
    height: int
    margin_left: int
    margin_right: int
    margin_top: int
    margin_bottom: int

    @property
    def left(self) -> int:
        return self.margin_left

    @property
    def right(self) -> int:
        return self.width - self.margin_right

    @property
    def top(self) -> int:
        return self.margin_top

    @property
    def bottom(self) -> int:
        return self.height - self.margin_bottom

    @property
    def plot_width(self) -> int:
        return self.right - self.left

    @property
    def plot_height(self) -> int:
        return self.bottom - self.top

    def x(self, share: float) -> float:
        """Where a share of the x axis falls: 0 at the plot's left edge, 1 at its right."""
        return round(self.left + share * self.plot_width, 1)

    def y(self, share: float) -> float:
        """Where a share of the y axis falls: 0 at the plot's bottom edge, 1 at its top."""
        return round(self.top + (1 - share) * self.plot_height, 1)

    def axes(self) -> dict[str, float]:
        """The frame as a chart's template reads it: the drawing's size, the plot's edges, and
        where the x axis's title (centred below the plot) and the y axis's (centred beside
        it, rotated) go."""
        return {
            "width": self.width,
            "height": self.height,
            "left": self.left,
            "right": self.right,
            "top": self.top,
            "bottom": self.bottom,
            "x_title_x": self.left + self.plot_width / 2,
            "x_title_y": self.height - TITLE_FROM_BOTTOM,
            "y_title_y": self.top + self.plot_height / 2,
        }
