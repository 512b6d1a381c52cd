"""The geometry of a training run's curves, drawn as SVG by the dashboard template: a loss
panel (training and validation loss) and a validation PHI F1 panel (0 to 1), one point per
epoch. Only numbers leave this module; the template writes the SVG elements."""

from __future__ import annotations

import dataclasses
import math

PANEL_WIDTH, PANEL_HEIGHT, GAP = 300, 150, 24
LEFT, RIGHT, TOP, BOTTOM = 46, 10, 22, 26  # margins of the plot area inside a panel
WIDTH = 2 * PANEL_WIDTH + GAP
PLOT = (LEFT, TOP, PANEL_WIDTH - LEFT - RIGHT, PANEL_HEIGHT - TOP - BOTTOM)  # x, y, width, height
PANELS = (  # title, fixed y range or None (the values' range), (metric, label, css class) per line
    ("loss", None, (("loss", "training", "train"), ("val_loss", "validation", "valid"))),
    ("validation PHI F1", (0.0, 1.0), (("val_f1", "validation", "f1"),)),
)


@dataclasses.dataclass(frozen=True)
class Line:
    label: str
    css: str
    points: list[tuple[float, float]]

    @property
    def polyline(self) -> str:
        return " ".join(f"{x:.1f},{y:.1f}" for x, y in self.points)


@dataclasses.dataclass(frozen=True)
class Panel:
    title: str
    left: float  # x offset of the panel in the SVG
    lines: list[Line]
    ticks: list[tuple[float, str]]  # (y, label) on the vertical axis
    epochs: tuple[int, int]  # first and last epoch, labelled under the horizontal axis


def training_curves(epochs: list[dict]) -> list[Panel]:
    """The panels of a run whose epoch records (run_epochs metrics with "epoch") are `epochs`;
    a metric missing from every record is left out, and a panel with no metric at all too."""
    records = sorted((record for record in epochs if isinstance(record.get("epoch"), int)),
                     key=lambda record: record["epoch"])
    if not records:
        return []
    first, last = records[0]["epoch"], records[-1]["epoch"]
    x0, y0, width, height = PLOT
    panels = []
    for index, (title, fixed, metrics) in enumerate(PANELS):
        series = {metric: [(record["epoch"], float(record[metric])) for record in records
                           if _finite(record.get(metric))] for metric, _, _ in metrics}
        values = [value for points in series.values() for _, value in points]
        if not values:
            continue
        low, high = fixed or _padded(min(values), max(values))

        def x(epoch: int) -> float:
            return x0 + (width / 2 if last == first else width * (epoch - first) / (last - first))

        def y(value: float) -> float:
            return y0 + height * (1 - (min(max(value, low), high) - low) / (high - low))

        lines = [Line(label, css, [(x(epoch), y(value)) for epoch, value in series[metric]])
                 for metric, label, css in metrics if series[metric]]
        ticks = [(y(value), f"{value:.3g}") for value in (low, (low + high) / 2, high)]
        panels.append(Panel(title, index * (PANEL_WIDTH + GAP), lines, ticks, (first, last)))
    return panels


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _padded(low: float, high: float) -> tuple[float, float]:
    """[low, high] widened by 5 % on each side (by 0.5 when the values are all equal)."""
    pad = (high - low) * 0.05 or 0.5
    return low - pad, high + pad
