"""How well the classifier's confidences are calibrated, before and after its calibration map
(issue #28), on synthetic texted issues (`tests/raters/synthetic.texted_issues`, 1,200 by
default: the issue's case).

Per seed: the issues are every one final; the classifier backend (`raters.classifier`) labels
them as a run over the project's final issues does (5 cross-fitted fold models, each issue's
confidence mapped by the calibration map fitted on the other folds' out-of-fold labels). Its
uncalibrated confidence (`parameters.uncalibrated_confidence`, the fold model's probability
of its chosen class) and its stored confidence are each scored against the issue's label:
accuracy, mean confidence, expected calibration error (10 equal-width bins,
`raters.calibration`), the accuracy of the labels with confidence in (0.2, 0.5], and the worst
shortfall of "confidence >= T" (T - accuracy of the labels at or above T, T = 0.5 … 0.9).
Medians over the seeds are printed last. No database: the backend never touches one.

    .venv/bin/python bench/calibration_bench.py [--issues 1200] [--seeds 0,1,2,3,4] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def setup() -> None:
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/annotator_bench")
    os.environ.setdefault("SECRET_KEY", "bench-only-not-secret")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()


def scores(confidences: list[float], hits: list[bool]) -> dict[str, float | None]:
    from raters.calibration import expected_calibration_error, reliability

    low = [h for c, h in zip(confidences, hits, strict=True) if 0.2 < c <= 0.5]
    shortfall = []
    for threshold in (0.5, 0.6, 0.7, 0.8, 0.9):
        kept = [h for c, h in zip(confidences, hits, strict=True) if c >= threshold]
        if len(kept) >= 30:
            shortfall.append(threshold - sum(kept) / len(kept))
    return {
        "accuracy": sum(hits) / len(hits),
        "mean_confidence": sum(confidences) / len(confidences),
        "ece": expected_calibration_error(reliability(confidences, hits)),
        "accuracy_at_0.2_to_0.5": sum(low) / len(low) if low else None,
        "worst_threshold_shortfall": max(shortfall) if shortfall else None,
    }


def one_seed(issues: int, seed: int) -> dict:
    from labeling.models import MachineRater
    from raters.backends import IssueText, LabelRequest
    from raters.classifier import ClassifierBackend
    from tests.raters.synthetic import texted_issues

    pairs = texted_issues(issues, seed)
    finals = {i: label for i, (label, _) in enumerate(pairs)}
    texts = {i: f"Problem {i}\n{text}" for i, (_, text) in enumerate(pairs)}
    request = LabelRequest(
        project_id=0,
        items=[IssueText(i, "", texts[i]) for i in finals],
        finals=finals,
        final_texts=texts,
    )
    start = time.perf_counter()
    labels = list(ClassifierBackend(MachineRater(name="bench", kind="classifier")).label(request))
    seconds = time.perf_counter() - start
    hits = [p.code == finals[p.issue_id] for p in labels]
    raw = [float(p.parameters["uncalibrated_confidence"]) for p in labels]
    calibrated = [float(p.confidence or 0.0) for p in labels]
    return {
        "seed": seed,
        "seconds": round(seconds, 2),
        "before": scores(raw, hits),
        "after": scores(calibrated, hits),
        "methods": sorted({p.parameters["calibration"]["method"] for p in labels}),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issues", type=int, default=1200)
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    setup()
    runs = []
    for seed in (int(s) for s in args.seeds.split(",")):
        run = one_seed(args.issues, seed)
        runs.append(run)
        if not args.json:
            b, a = run["before"], run["after"]
            print(
                f"seed {seed}: accuracy {b['accuracy']:.3f}; before: mean confidence "
                f"{b['mean_confidence']:.3f}, ECE {b['ece']:.3f}; after: mean confidence "
                f"{a['mean_confidence']:.3f}, ECE {a['ece']:.3f} ({', '.join(run['methods'])}; "
                f"{run['seconds']} s)",
                flush=True,
            )

    def median(side: str, key: str) -> float | None:
        values = [r[side][key] for r in runs if r[side][key] is not None]
        return round(statistics.median(values), 3) if values else None

    summary = {
        side: {key: median(side, key) for key in runs[0][side]} for side in ("before", "after")
    }
    if args.json:
        print(json.dumps({"issues": args.issues, "runs": runs, "median": summary}, indent=2))
        return
    for side in ("before", "after"):
        print(f"median {side}: " + ", ".join(f"{k} {v}" for k, v in summary[side].items()))


if __name__ == "__main__":
    main()
