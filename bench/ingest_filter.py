"""Benchmark: the keyword filter over 40,000 issues with the study's 84-keyword MindSpore list.

Two figures: matching alone (title, body and labels of each issue through the one compiled
regex), and a full re-filter of a repository stored in PostgreSQL (read, match, write back the
changed rows). Target: <= 2 s.

    .venv/bin/python bench/ingest_filter.py [--issues 40000] [--runs 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from _django import setup

setup()

from ingest.filtering import refilter_repository  # noqa: E402
from ingest.keywords import compile_keywords, study_keyword_lists  # noqa: E402
from ingest.models import Issue, KeywordSet, Repository  # noqa: E402

# Everyday issue words, including near misses of keywords (yield, option, graph, models).
WORDS = [
    "the", "model", "training", "fails", "with", "error", "when", "loading", "checkpoint",
    "on", "device", "graph", "operator", "shape", "dtype", "tensor", "yield", "option",
    "optimizer", "kernel", "memory", "out", "of", "range", "step", "loss", "pipeline:",
    "dataset", "config", "version", "install", "build", "compile", "run", "script", "python",
    "log", "warning", "models.", "(gpu)", "Traceback", "mindspore.nn", "x_1", "int64",
]  # fmt: skip
HITS = ["LLaMA", "Qwen", "MoE", "bfloat16", "ParallelMode", "long sequence", "LoRA", "Ascend910B"]


def make_texts(n: int, seed: int = 7) -> list[tuple[str, str, list[str]]]:
    rng = random.Random(seed)
    texts = []
    for i in range(n):
        body_words = rng.choices(WORDS, k=rng.randint(40, 160))
        if i % 3 == 0:
            body_words.insert(rng.randrange(len(body_words)), rng.choice(HITS))
        title = " ".join(rng.choices(WORDS, k=8))
        texts.append((title, " ".join(body_words), ["bug"] if i % 5 == 0 else []))
    return texts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issues", type=int, default=40_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    keywords = study_keyword_lists()["mindspore_keywords"]
    texts = make_texts(args.issues)
    chars = sum(len(t) + len(b) for t, b, _ in texts)
    print(f"{args.issues} issues ({chars / 1e6:.1f} M characters), {len(set(keywords))} keywords")

    times, kept = [], 0
    for _ in range(args.runs):
        started = time.perf_counter()
        matcher = compile_keywords(list(keywords))
        kept = sum(1 for t, b, labels in texts if matcher.matches(t, b, " ".join(labels)))
        times.append(time.perf_counter() - started)
    print(f"matching: median {statistics.median(times):.2f} s of {args.runs} "
          f"({', '.join(f'{t:.2f}' for t in times)}); {kept} kept")  # fmt: skip

    Repository.objects.filter(owner="bench-filter").delete()
    repo = Repository.objects.create(
        forge="gitee", api_url="https://gitee.com/api/v5", owner="bench-filter", name="ms",
        is_framework=True,
    )  # fmt: skip
    Issue.objects.bulk_create(
        [
            Issue(repository=repo, number=str(i), url=f"{repo.web_url}/issues/{i}", title=t,
                  body=b, labels=labels)
            for i, (t, b, labels) in enumerate(texts)
        ],
        batch_size=2000,
    )  # fmt: skip
    ms = KeywordSet.objects.update_or_create(
        name="bench MindSpore", defaults={"keywords": keywords}
    )[0]
    db_times = []
    for i in range(args.runs):
        if i:  # force rows to change again, so each run writes as a first filter would
            Issue.objects.filter(repository=repo).update(filter_status="not_filtered")
        started = time.perf_counter()
        counts = refilter_repository(repo, ms)
        db_times.append(time.perf_counter() - started)
    print(f"re-filter in PostgreSQL: median {statistics.median(db_times):.2f} s of {args.runs} "
          f"({', '.join(f'{t:.2f}' for t in db_times)}); {counts}")  # fmt: skip
    repo.delete()


if __name__ == "__main__":
    main()
