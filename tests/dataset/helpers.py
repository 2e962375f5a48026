"""Helpers for the dataset tests: the sample files and a writer of small label files."""

from __future__ import annotations

import csv
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "sample-labels"
MEGATRON = DATA / "Megatron-LM.csv"
MINDSPEED = DATA / "MindSpeed.csv"
SAMPLES = [MEGATRON, MINDSPEED]


def read_rows(path: Path | str) -> list[list[str]]:
    """A CSV's rows (header included), BOM stripped, as the csv module reads them."""
    with open(path, encoding="utf-8-sig", newline="") as fh:
        return [row for row in csv.reader(fh) if row]


def write_csv(path: Path, rows: list[list[str]], bom: bool = True) -> Path:
    with open(path, "w", encoding="utf-8-sig" if bom else "utf-8", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    return path


HEADER3 = ["Issue_URL", "Label1", "Label2", "Label3", "Final_Label"]
GH = "https://github.com/NVIDIA/Megatron-LM/issues/"
GITEE = "https://gitee.com/ascend/MindSpeed/issues/"
