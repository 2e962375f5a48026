# ruff: noqa: RUF002 (the method is written in its paper's symbols)
"""Human labels saved by active sampling (issue 29, item 7): uniform against active samples of
the same size, at type level, on the study's published finals with a simulated rater of about
80 % theme accuracy whose confidence says where it errs.

Data: the study's published final labels of its two sample repositories (Megatron-LM and
MindSpeed, 1,194 issues, theme codes), replicated to the study's 38,742 issues, as
`bench/estimate_plan.py`. The rater is simulated per issue: a confidence q, and the final
theme with probability q, otherwise another theme (of the same type four times in five). Three
raters:
- `beta`: q ~ Beta(4, 1) (mean 0.80), calibrated: a confidence that grades smoothly;
- `easy-hard`: 70 % of issues easy (q from 0.90 to 0.99), 30 % hard (q from 0.40 to 0.70),
  mean ≈ 0.80, calibrated;
- `flat`: the `beta` rater's labels, but the same confidence (0.8) everywhere: the control,
  where the active draw is uniform and should save nothing.
For each size n, `--draws` uniform samples and `--draws` active draws (π from √(1 − q), 20 %
of the budget spread uniformly, Bernoulli); the figure is the mean over draws and type codes of
the PPI++ interval's width, the uniform labels the active width would take (n·(W_u/W_a)²) and
the labels saved (that minus the active draws' mean size). `agreement.active.compare_sampling`
(ppi-python). No database.

    .venv/bin/python bench/active_sampling.py [--shared ../shared] [--draws 20]
        [--sizes 500,1000,2000] [--level type|theme]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

STUDY_SIZE = 38_742
TYPES = ["A", "B", "C", "FP"]


def confidences(kind: str, n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    if kind == "easy-hard":
        return [
            rng.uniform(0.90, 0.99) if rng.random() < 0.7 else rng.uniform(0.40, 0.70)
            for _ in range(n)
        ]
    return [rng.betavariate(4, 1) for _ in range(n)]


def rater(truth: list[str], q: list[float], seed: int) -> list[str]:
    rng = random.Random(seed)
    themes = sorted(set(truth))
    by_type: dict[str, list[str]] = {}
    for theme in themes:
        by_type.setdefault(theme.split(".")[0], []).append(theme)
    out = []
    for code, p in zip(truth, q, strict=True):
        if rng.random() < p:
            out.append(code)
            continue
        same = [t for t in by_type[code.split(".")[0]] if t != code]
        pool = same if same and rng.random() < 0.8 else [t for t in themes if t != code]
        out.append(rng.choice(pool))
    return out


def saved(row) -> str:
    if row.uniform_equivalent is None or row.saved is None:
        return "beyond the sizes | -"
    share = 100 * row.saved / row.uniform_equivalent
    return f"{row.uniform_equivalent:,.0f} | {row.saved:,.0f} ({share:.0f} %)"


def main() -> None:
    from estimate_plan import published_finals
    from threadpoolctl import threadpool_limits

    from agreement.active import compare_sampling

    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default=str(ROOT.parent / "shared"))
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--sizes", default="500,1000,2000")
    parser.add_argument("--level", choices=("type", "theme"), default="type")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    finals = published_finals(Path(args.shared))
    truth_theme = [finals[i % len(finals)] for i in range(STUDY_SIZE)]

    def at_level(code: str) -> str:
        return code.split(".")[0] if args.level == "type" else code

    truth = [at_level(t) for t in truth_theme]
    codes = TYPES if args.level == "type" else sorted(set(truth))
    print(
        f"{len(finals)} published finals replicated to {STUDY_SIZE}; {args.draws} draws; "
        f"level {args.level} ({len(codes)} codes)"
    )
    print("| rater | theme acc. | n | active n | width uniform | width active "
          "| uniform n for it | saved | (W_u/W_a)² | coverage u / a |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for kind in ("beta", "easy-hard", "flat"):
        started = time.perf_counter()
        q = confidences("beta" if kind == "flat" else kind, STUDY_SIZE, seed=1)
        machine_theme = rater(truth_theme, q, seed=2)
        machine = [at_level(m) for m in machine_theme]
        reported = [0.8] * STUDY_SIZE if kind == "flat" else q
        accuracy = sum(a == b for a, b in zip(truth_theme, machine_theme, strict=True))
        with threadpool_limits(limits=1, user_api="blas"):
            rows = compare_sampling(
                codes, truth, machine, reported, sizes, draws=args.draws, seed=3
            )
        for row in rows:
            print(
                f"| {kind} | {accuracy / STUDY_SIZE:.3f} | {row.size:,} | "
                f"{row.active_mean_drawn:,.0f} | ±{50 * row.uniform_width:.2f} pp | "
                f"±{50 * row.active_width:.2f} pp | {saved(row)} | "
                f"{(row.uniform_width / row.active_width) ** 2:.2f} | "
                f"{100 * row.uniform_coverage:.0f} / {100 * row.active_coverage:.0f} % |"
            )
        print(f"({kind}: {time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
