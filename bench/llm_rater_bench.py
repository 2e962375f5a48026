"""The llm machine rater's own overhead and its concurrency, against the tests' fake endpoint.

The backend (`raters.llm.LLMBackend`) labels N synthetic issues through the real `openai`
client and HTTP on 127.0.0.1 (tests/raters/fakeopenai.py), with the fake answering each request
after `--delay` seconds (a model's latency), at each concurrency given. No database: the
runner's storing is not part of these figures. With a delay of 0 the figure is the client's and
the prompt's own cost per issue; with a delay, how far concurrency hides the latency.

    .venv/bin/python bench/llm_rater_bench.py [--issues N] [--delay S] [--concurrency 1,4,8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("SECRET_KEY", "bench")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issues", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--concurrency", default="1,4,8")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings

    from labeling.models import MachineRater
    from raters.backends import IssueText, LabelRequest, NodeText
    from raters.llm import LLMBackend
    from tests.raters.fakeopenai import FakeOpenAI

    codes = ["A.1", "B.1", "C.1", "C.2", "FP"]
    taxonomy = [NodeText(c, f"node {c}", f"description of {c}") for c in ("A", "B", "C")]
    taxonomy += [NodeText(c, f"node {c}", f"description of {c}") for c in codes[:-1]]
    titles = {i: f"Issue {i}" for i in range(args.issues)}
    fake = FakeOpenAI(answers={t: codes[i % 5] for i, t in titles.items()}, delay=args.delay)
    fake.start()
    settings.MODEL_API_HOSTS = [fake.host]
    rater = MachineRater(name="bench", kind="llm", model="m", api_url=fake.base_url, seed=1)
    finals = {10_000 + i: codes[i % 5] for i in range(20)}
    body = "body words " * 200
    items = [IssueText(i, "", f"{t}\n{body}") for i, t in titles.items()]
    try:
        for concurrency in [int(c) for c in args.concurrency.split(",")]:
            settings.MODEL_API_CONCURRENCY = concurrency
            times = []
            for _ in range(args.runs):
                request = LabelRequest(
                    project_id=1,
                    items=items,
                    finals=finals,
                    taxonomy=taxonomy,
                    taxonomy_version=1,
                    guideline="Label the cause.",
                    fetch_texts=lambda ids: {i: f"Example {i}\nbody" for i in ids},
                )
                start = time.perf_counter()
                labels = list(LLMBackend(rater).label(request))
                times.append(time.perf_counter() - start)
                assert len(labels) == args.issues and all(p.code for p in labels)
            median = statistics.median(times)
            print(
                f"concurrency {concurrency}: {args.issues} issues, delay {args.delay} s: runs "
                f"{', '.join(f'{t:.2f}' for t in times)} s, median {median:.2f} s, "
                f"{args.issues / median:.0f} issues/s"
            )
    finally:
        fake.stop()


if __name__ == "__main__":
    main()
