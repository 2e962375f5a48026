"""How many human-labeled issues give every type share to within ±2 percentage points: PPI++
with a machine rater of about 80 % theme accuracy, against the human sample alone.

Data: the study's published final labels of its two sample repositories (Megatron-LM and
MindSpeed, 1,194 issues, theme codes), replicated to the study's 38,742 issues. The machine
rater is simulated: it gives the final theme with probability 0.80, otherwise another theme, of
the same type four times in five (as the volunteers' own mistakes mostly were). For each sample
size n, `--draws` uniform random samples of n issues are taken as the human-labeled ones; the
figure is the mean over draws of the widest half-width among the type shares. Intervals are
`agreement.estimates` (ppi-python). No database.

    .venv/bin/python bench/estimate_plan.py [--shared ../shared] [--draws 40] [--half-width 0.02]
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STUDY_SIZE = 38_742
TYPES = ["A", "B", "C", "FP"]


def published_finals(shared: Path) -> list[str]:
    finals = []
    for repo in ("Megatron-LM", "MindSpeed"):
        path = shared / "reference" / "sample-labels" / repo / f"{repo}.csv"
        with path.open(encoding="utf-8-sig", newline="") as handle:
            finals += [row["Final_Label"].strip() for row in csv.DictReader(handle)]
    return finals


def simulated_rater(truth: list[str], accuracy: float, seed: int) -> list[str]:
    rng = random.Random(seed)
    themes = sorted(set(truth))
    by_type: dict[str, list[str]] = {}
    for theme in themes:
        by_type.setdefault(theme.split(".")[0], []).append(theme)
    out = []
    for code in truth:
        if rng.random() < accuracy:
            out.append(code)
            continue
        same = [t for t in by_type[code.split(".")[0]] if t != code]
        pool = same if same and rng.random() < 0.8 else [t for t in themes if t != code]
        out.append(rng.choice(pool))
    return out


def widest(estimates, classical: bool) -> float:
    if classical:
        return max((e.classical_ci_high - e.classical_ci_low) / 2 for e in estimates)
    return max((e.ci_high - e.ci_low) / 2 for e in estimates)


def main() -> None:
    from agreement.estimates import estimate_shares, plan_sizes

    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default=str(ROOT.parent / "shared"))
    parser.add_argument("--draws", type=int, default=40)
    parser.add_argument("--half-width", type=float, default=0.02)
    parser.add_argument("--accuracy", type=float, default=0.80)
    args = parser.parse_args()

    finals = published_finals(Path(args.shared))
    truth_theme = [finals[i % len(finals)] for i in range(STUDY_SIZE)]
    machine_theme = simulated_rater(truth_theme, args.accuracy, seed=1)
    truth = [t.split(".")[0] for t in truth_theme]
    machine = [m.split(".")[0] for m in machine_theme]
    theme_acc = sum(a == b for a, b in zip(truth_theme, machine_theme, strict=True)) / STUDY_SIZE
    type_acc = sum(a == b for a, b in zip(truth, machine, strict=True)) / STUDY_SIZE
    shares = {t: truth.count(t) / STUDY_SIZE for t in TYPES}
    print(
        f"{len(finals)} published finals replicated to {STUDY_SIZE}; type shares "
        + ", ".join(f"{t} {100 * s:.1f} %" for t, s in shares.items())
        + f"; simulated rater: theme accuracy {theme_acc:.3f}, type accuracy {type_acc:.3f}"
    )
    print(f"| n human | widest type half-width, PPI++ | human only | ({args.draws} draws) |")
    print("| --- | --- | --- | --- |")
    found: dict[str, int | None] = {"ppi": None, "classical": None}
    started = time.perf_counter()
    for n in (100, 150, 200, 250, 500, 1000, 1500, 2000, 2250, 2500, 3000):
        ppi, classical = [], []
        for draw in range(args.draws):
            rng = random.Random(1000 * n + draw)
            chosen = set(rng.sample(range(STUDY_SIZE), n))
            sample = sorted(chosen)
            estimates = estimate_shares(
                TYPES,
                [truth[i] for i in sample],
                [machine[i] for i in sample],
                [machine[i] for i in range(STUDY_SIZE) if i not in chosen],
            )
            ppi.append(widest(estimates, classical=False))
            classical.append(widest(estimates, classical=True))
        mean_ppi, mean_classical = sum(ppi) / len(ppi), sum(classical) / len(classical)
        for key, value in (("ppi", mean_ppi), ("classical", mean_classical)):
            if found[key] is None and value <= args.half_width:
                found[key] = n
        print(f"| {n:,} | ±{100 * mean_ppi:.2f} pp | ±{100 * mean_classical:.2f} pp | |")
    pilot = sorted(random.Random(7).sample(range(STUDY_SIZE), 500))
    chosen = set(pilot)
    plan = plan_sizes(
        TYPES,
        [truth[i] for i in pilot],
        [machine[i] for i in pilot],
        [machine[i] for i in range(STUDY_SIZE) if i not in chosen],
        args.half_width,
    )
    print(
        f"smallest n on the grid within ±{100 * args.half_width:.0f} pp: PPI++ {found['ppi']}, "
        f"human only {found['classical']}; plan from a pilot of 500 (`--plan`): PPI++ "
        f"{plan.n_ppi}, human only {plan.n_classical}; {time.perf_counter() - started:.1f} s"
    )


if __name__ == "__main__":
    main()
