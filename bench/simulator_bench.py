"""Benchmark the policy simulator on a synthetic study of the full study's size.

38,742 issues x 7 raters (the study's type mix; each rater gives the issue's theme with
probability 0.85, otherwise another theme of the same type 4 times in 5, as
bench/dataset_generate.py), written with COPY (`lib.sql.copy_rows`) into its own database
(default annotator_bench_simulator, created and migrated if missing; seeded once and kept).
Times `agreement.simulation.run` (what `manage.py simulate_policy` calls: load the labels, replay
20 orders, per type) and `tradeoff` (the page: lead 1, 2, 3 and fixed panels on the same
orders), each run in a fresh process; medians of --runs.

    .venv/bin/python bench/simulator_bench.py [--runs 3] [--db NAME] [--orders 20]

Target (issue 15): <= 10 s with 20 orders.

`--machine` also times `simulate_machine` (what `simulate_policy --machine-rater` calls: the
replays with an enlisted machine rater and without, lead 2) with a machine rater whose label is
the final's theme 4 times in 5 (else a random theme) at a uniform random confidence, threshold
0.5 (seeded once into the same database, `bench-clf`).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import time

from _django import migrated_database, run_stage, setup_stage

PROJECT = "Synthetic study (simulator)"
MIX = {"A": 542, "B": 12_491, "C": 25_709}
RATERS = 7


def _django(db: str) -> None:
    setup_stage(db)


def seed() -> dict:
    """The synthetic project, written with COPY unless it is there already."""
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from annotator.models import Membership, Project, Role
    from ingest.models import Issue, Repository
    from labeling.models import Annotation, Resolution
    from lib.sql import copy_rows
    from taxonomy.loader import load_study_taxonomy
    from taxonomy.models import TaxonomyNode

    existing = Project.objects.filter(name=PROJECT).first()
    if existing:
        return {"seeded": False, "annotations": existing.annotations.count()}
    start = time.perf_counter()
    version = load_study_taxonomy(only_if_missing=True)
    themes: dict[str, list[tuple[int, int]]] = {}
    for node in TaxonomyNode.objects.filter(version=version, level=TaxonomyNode.Level.THEME):
        type_code = node.code.split(".")[0]
        themes.setdefault(type_code, []).append((node.parent_id, node.pk))
    all_themes = [t for code in sorted(themes) for t in themes[code]]
    rng = random.Random(20250101)
    with transaction.atomic():
        project = Project.objects.create(name=PROJECT, taxonomy_version=version)
        repo = Repository.objects.create(
            forge="github",
            api_url=Repository.DEFAULT_API_URLS["github"],
            owner="bench",
            name="simulator",
        )
        user_model = get_user_model()
        raters = []
        for i in range(RATERS):
            user = user_model.objects.create_user(f"bench-sim-rater-{i + 1}")
            Membership.objects.create(project=project, user=user, role=Role.ANNOTATOR)
            raters.append(user.pk)
        total = sum(MIX.values())
        copy_rows(
            Issue,
            ["repository_id", "number", "url"],
            (
                (repo.pk, str(n), f"https://github.com/bench/simulator/issues/{n}")
                for n in range(total)
            ),
        )
        issue_ids = list(Issue.objects.filter(repository=repo).values_list("pk", flat=True))
        types = [t for t, n in MIX.items() for _ in range(n)]
        rng.shuffle(types)
        annotations, finals = [], []
        for issue_id, type_code in zip(issue_ids, types, strict=True):
            final = rng.choice(themes[type_code])
            finals.append((project.pk, issue_id, "imported", *final))
            for rater in raters:
                if rng.random() < 0.85:
                    label = final
                elif rng.random() < 0.8:
                    label = rng.choice(themes[type_code])
                else:
                    label = rng.choice(all_themes)
                annotations.append((project.pk, issue_id, rater, *label))
        copy_rows(
            Annotation,
            ["project_id", "issue_id", "annotator_id", "issue_type_id", "theme_id"],
            annotations,
        )
        copy_rows(
            Resolution, ["project_id", "issue_id", "method", "issue_type_id", "theme_id"], finals
        )
    return {
        "seeded": True,
        "annotations": len(annotations),
        "seconds": round(time.perf_counter() - start, 1),
    }


def _machine_labels(project) -> None:
    """The bench's machine rater and one label per issue, written once."""
    from labeling.models import MachineLabel, MachineRater, Resolution
    from taxonomy.models import TaxonomyNode

    if MachineRater.objects.filter(project=project, name="bench-clf").exists():
        return
    rater = MachineRater.objects.create(
        project=project, name="bench-clf", kind="classifier", confidence_threshold=0.5
    )
    themes = list(
        TaxonomyNode.objects.filter(
            version=project.taxonomy_version, level=TaxonomyNode.Level.THEME
        ).values_list("parent_id", "pk")
    )
    rng = random.Random(7)
    rows = []
    finals = Resolution.objects.filter(project=project).values_list(
        "issue_id", "issue_type_id", "theme_id"
    )
    for issue_id, type_id, theme_id in finals:
        label = (type_id, theme_id) if rng.random() < 0.8 else rng.choice(themes)
        rows.append(
            MachineLabel(
                rater=rater,
                issue_id=issue_id,
                issue_type_id=label[0],
                theme_id=label[1],
                confidence=rng.random(),
            )
        )
    MachineLabel.objects.bulk_create(rows, batch_size=2000)


def stage(name: str, orders: int) -> dict:
    from annotator.models import Project

    project = Project.objects.get(name=PROJECT)
    if name == "run":
        from agreement.simulation import run

        start, cpu = time.perf_counter(), time.process_time()
        report = run(project, lead=2, orders=orders, seed=1)
        extra = {
            "issues": report["issues"],
            "labels_per_issue": report["labels_per_issue"]["mean"],
            "same_final": report["same_final"],
        }
    elif name == "tradeoff":
        from agreement.simulation import tradeoff

        start, cpu = time.perf_counter(), time.process_time()
        result = tradeoff(project, leads=(1, 2, 3), orders=orders, seed=1)
        extra = {"points": len(result["points"])}
    elif name == "machine":
        from agreement.simulation import machine_votes, simulate_machine

        _machine_labels(project)
        start, cpu = time.perf_counter(), time.process_time()
        votes = machine_votes(project, "bench-clf", 0.5)
        report = simulate_machine(project, votes, lead=2, orders=orders, seed=1)
        extra = {
            "machine_votes": report["machine_votes"],
            "human_labels_per_issue": report["human_labels_per_issue"],
            "same_final": report["same_final"],
            "human_only": report["human_only"],
            "costs_more": report["costs_more"],
            "costs_fewer": report["costs_fewer"],
        }
    else:
        raise SystemExit(f"unknown stage {name}")
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "stage": name,
        "seconds": round(seconds, 3),
        # On a shared machine the wall clock includes waiting for a core; CPU time does not.
        "cpu_seconds": round(cpu, 3),
        "peak_mb": round(peak, 1),
        **extra,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--orders", type=int, default=20)
    parser.add_argument("--db", default="annotator_bench_simulator")
    parser.add_argument("--machine", action="store_true", help="also time simulate_machine")
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        _django(args.db)
        result = seed() if args.stage == "seed" else stage(args.stage, args.orders)
        print(json.dumps(result))
        return

    env = migrated_database(args.db)

    orders = ("--orders", str(args.orders))
    run_stage(__file__, args.db, "seed", env, *orders)
    results: dict[str, list[dict]] = {"run": [], "tradeoff": []}
    if args.machine:
        results["machine"] = []
    for _ in range(args.runs):
        for name in results:
            results[name].append(run_stage(__file__, args.db, name, env, *orders))
    print(f"\nmedians of {args.runs} runs, {args.orders} orders:")
    for name, runs in results.items():
        print(
            f"  {name:<10} {statistics.median(r['seconds'] for r in runs):7.2f} s   "
            f"cpu {statistics.median(r['cpu_seconds'] for r in runs):6.2f} s   "
            f"peak {statistics.median(r['peak_mb'] for r in runs):6.1f} MB"
        )


if __name__ == "__main__":
    main()
