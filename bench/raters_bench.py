"""The classifier machine rater at the study's size: fit, predict and the cross-fitted run.

Synthetic issues (default 38,742, about 2.3 KB of text each, 70 theme-level classes plus FP):
each class has its own 40 words drawn from a 20,000-word vocabulary; an issue's text is 330
words, a quarter from its class and the rest from the whole vocabulary. Each stage runs in its
own process so that its peak memory (ru_maxrss) is its own:

* fit: `raters.classifier.fit` on every issue (the model that labels open issues);
* predict: that model labeling every issue (`Model.predict`: chunked, the fast features);
* predict-sklearn: the same model's pipeline `predict_proba` on every issue, as predict was
  before (the reference, to compare under the same load);
* crossfit: what a run over a project's final issues does (5 fold models, each issue predicted
  by the one that left it out).

No database: the issue texts a run reads from PostgreSQL are not part of these figures.

    .venv/bin/python bench/raters_bench.py [--issues N] [--stages fit,predict,crossfit]
    .venv/bin/python bench/raters_bench.py --stages fit,predict,predict-sklearn
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CLASSES = ["FP"] + [
    f"{t}.{i}" for t, n in (("A", 11), ("B", 17), ("C", 42)) for i in range(1, n + 1)
]


def corpus(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(20_000)]
    words = {c: rng.sample(vocabulary, 40) for c in CLASSES}
    texts, targets = [], []
    for _ in range(n):
        c = rng.choice(CLASSES)
        own = rng.choices(words[c], k=80)
        rest = rng.choices(vocabulary, k=250)
        texts.append(" ".join(own + rest))
        targets.append(c)
    return texts, targets


def stage(name: str, n: int, model_path: str) -> dict:
    from raters import classifier

    texts, targets = corpus(n)
    start = time.perf_counter()
    if name == "fit":
        model = classifier.fit(texts, targets)
        Path(model_path).write_bytes(pickle.dumps(model))
        extra = {}
    elif name in ("predict", "predict-sklearn"):
        model = pickle.loads(Path(model_path).read_bytes())
        start = time.perf_counter()
        if name == "predict":
            codes, _ = model.predict(texts)
        else:
            proba = model.pipeline.predict_proba(texts)
            codes = [model.classes[i] for i in proba.argmax(axis=1)]
        extra = {"accuracy_in_sample": sum(a == b for a, b in zip(codes, targets, strict=True)) / n}
    else:
        folds = classifier.fold_of(list(range(n)))
        hits = 0
        for k in sorted(set(folds.values())):
            train = [i for i in range(n) if folds[i] != k]
            held = [i for i in range(n) if folds[i] == k]
            model = classifier.fit([texts[i] for i in train], [targets[i] for i in train])
            codes, _ = model.predict([texts[i] for i in held])
            hits += sum(c == targets[i] for c, i in zip(codes, held, strict=True))
        extra = {"accuracy_out_of_sample": hits / n}
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "stage": name,
        "issues": n,
        "seconds": round(seconds, 2),
        "peak_mb": round(peak_mb),
        **extra,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issues", type=int, default=38_742)
    parser.add_argument("--stages", default="fit,predict,crossfit")
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        print(json.dumps(stage(args.stage, args.issues, args.model)))
        return
    texts, _ = corpus(min(args.issues, 2000))
    print(f"mean text: {sum(len(t) for t in texts) / len(texts):.0f} characters")
    with tempfile.TemporaryDirectory() as tmp:
        model = str(Path(tmp) / "model.pickle")
        for name in args.stages.split(","):
            out = subprocess.run(
                [sys.executable, __file__, "--issues", str(args.issues), "--stage", name,
                 "--model", model],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            print(out.stdout.strip())


if __name__ == "__main__":
    main()
