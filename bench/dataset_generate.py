"""Generate a synthetic study in the published format: 11 repositories, 38,742 issues, 7 raters.

Type mix as the study: 542 questions, 12,491 requirements, 25,709 bugs. Each rater gives the
final theme with probability 0.85, otherwise another theme (of the same type 4 times in 5).
Deterministic (seeded), so every run benchmarks the same files.

`--times K` makes a study K times the size (issue #30 item 5): the same labels replicated K
times, each copy under new URLs (GitHub numbers `k * 1,000,000 + number`, Gitee numbers with
the copy's two digits appended), so K = 10 gives 387,420 issues and 2,711,940 labels. The first
copy is the 1x study itself, and `--times 1` (the default) writes the very same files as before.

    .venv/bin/python bench/dataset_generate.py OUT_DIR [--times K]
"""

from __future__ import annotations

import argparse
import csv
import random
from pathlib import Path

THEMES = {
    "A": [f"A.{i}" for i in range(1, 5)],
    "B": [f"B.{i}" for i in range(1, 5)],
    "C": [f"C.{i}" for i in range(1, 11)],
}
MIX = {"A": 542, "B": 12_491, "C": 25_709}
RATERS = 7
# (forge, owner, name, weight): the study's eleven repositories, Gitee for the MindSpore family.
REPOS = [
    ("github", "hpcaitech", "ColossalAI", 3),
    ("github", "deepspeedai", "DeepSpeed", 6),
    ("github", "NVIDIA", "Megatron-LM", 2),
    ("gitee", "mindspore", "mindformers", 2),
    ("github", "mindspore-lab", "mindnlp", 1),
    ("gitee", "ascend", "MindSpeed", 1),
    ("gitee", "mindspore", "mindspore", 4),
    ("github", "pytorch", "pytorch", 10),
    ("github", "tensorflow", "tensorflow", 3),
    ("github", "NVIDIA", "TensorRT-LLM", 3),
    ("github", "vllm-project", "vllm", 8),
]
GITEE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def copy_number(number: str, copy: int) -> str:
    """Issue `number` of the 1x study renumbered for copy `copy` (0: itself) of a scaled study."""
    if copy == 0:
        return number
    if number.isdigit():
        return str(copy * 1_000_000 + int(number))
    return f"{number}{copy:02d}"


def generate(out: Path, seed: int = 20250101, times: int = 1) -> list[Path]:
    rng = random.Random(seed)
    types = [t for t, n in MIX.items() for _ in range(n)]
    rng.shuffle(types)
    weights = [w for *_, w in REPOS]
    rows: dict[int, list[list[str]]] = {i: [] for i in range(len(REPOS))}
    all_themes = [t for themes in THEMES.values() for t in themes]
    gitee_seen: set[str] = set()
    for n, type_code in enumerate(types):
        repo = rng.choices(range(len(REPOS)), weights)[0]
        forge, owner, name, _ = REPOS[repo]
        if forge == "gitee":
            number = "I" + "".join(rng.choices(GITEE_ALPHABET, k=5))
            while number in gitee_seen:
                number = "I" + "".join(rng.choices(GITEE_ALPHABET, k=5))
            gitee_seen.add(number)
        else:
            number = str(100_000 - n)
        url = f"https://{forge}.com/{owner}/{name}/issues/"
        final = rng.choice(THEMES[type_code])
        labels = []
        for _ in range(RATERS):
            if rng.random() < 0.85:
                labels.append(final)
            elif rng.random() < 0.8:
                labels.append(rng.choice(THEMES[type_code]))
            else:
                labels.append(rng.choice(all_themes))
        rows[repo].append([url, number, *labels, final])
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    header = ["Issue_URL", *(f"Label{i}" for i in range(1, RATERS + 1)), "Final_Label"]
    for repo, (_, _, name, _) in enumerate(REPOS):
        path = out / f"{name}.csv"
        with open(path, "w", encoding="utf-8-sig", newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(header)
            for copy in range(times):
                writer.writerows(
                    [f"{base}{copy_number(number, copy)}", *labels]
                    for base, number, *labels in rows[repo]
                )
        paths.append(path)
    return paths


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default="/tmp/bench-dataset")
    parser.add_argument("--times", type=int, default=1)
    args = parser.parse_args()
    target = Path(args.out)
    files = generate(target, times=args.times)
    rows = sum(len(p.read_text(encoding="utf-8-sig").splitlines()) - 1 for p in files)
    print(f"{rows} rows in {len(files)} files under {target}")
