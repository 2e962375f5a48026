"""What a release says about each machine rater of a project (#23): the one description that
`DATASHEET.md`, `datapackage.json` and the release's `machine_raters.json` are written from.

Per rater: name, kind, model, version (the rater's training count and the model versions its
current labels name), its prompt (an llm rater's template, `raters.prompt.TEMPLATE`, never an
issue's text; the classifier's feature configuration, `raters.classifier.config_text`) with the
SHA-256 of that text, how many distinct full prompt hashes its current labels carry (an llm
prompt also hashes the guideline, taxonomy version and few-shot ids; a classifier's, its
training set), the parameters, the dates (created, last trained, first and last current
label), the validation figures of `raters.validation.validation_report` (the raters page's
function: kappa at type and theme level, accuracy, invalid rate, coverage), and whether it is
enlisted in the stopping rule, with its confidence threshold; its alternative annotator test
(under `validation`, `alt_test`) and the estimates of the project's shares with its help
(`estimates`, `raters.reporting.release_estimates`: type shares over the scope and per
repository, theme shares over the scope, or why there is nothing to estimate). For an llm
rater also where its current labels' confidences come from (`confidence_from`: "logprobs",
"samples") and the forms of structured output its endpoint accepted (`output_formats`:
`raters.prompt.FORMATS`); a classifier's confidence is its class probability.

Never the endpoint's key, nor the name of the variable that holds it, nor the endpoint URL
(a URL may carry a token in its query).
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.db.models import Count, Max, Min

from annotator.models import Project
from labeling.models import MachineLabel, MachineRater
from raters import prompt
from raters.classifier import FEATURES, MODEL_NAME, config_text
from raters.reporting import release_estimates
from raters.validation import validation_report


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def prompt_of(rater: MachineRater) -> dict[str, str]:
    """The text a rater is asked with (its template or configuration) and its SHA-256."""
    if rater.kind == MachineRater.Kind.LLM:
        kind, text = "prompt template", prompt.TEMPLATE
    elif rater.kind == MachineRater.Kind.EXTERNAL:
        # Made elsewhere: each label's prompt hash is the imported file's SHA-256.
        return {"kind": "labels imported from a file", "text": "", "sha256": ""}
    else:
        kind, text = "feature configuration", config_text()
    return {"kind": kind, "text": text, "sha256": hashlib.sha256(text.encode()).hexdigest()}


def parameters_of(rater: MachineRater) -> dict[str, Any]:
    if rater.kind == MachineRater.Kind.LLM:
        return {
            "temperature": rater.temperature,
            "samples": rater.samples,
            "max_tokens": rater.max_tokens,
            "seed": rater.seed,
        }
    if rater.kind == MachineRater.Kind.EXTERNAL:
        return {}
    return {**FEATURES, "retrain_after": rater.retrain_after}


def describe_raters(project: Project) -> list[dict[str, Any]]:
    """Every machine rater of the project, by name (an empty list when it has none)."""
    raters = list(MachineRater.objects.filter(project=project).order_by("name"))
    if not raters:
        return []
    figures = {row["name"]: row for row in validation_report(project)["raters"]}
    out = []
    for rater in raters:
        current = MachineLabel.objects.filter(rater=rater, is_current=True).order_by()
        dates = current.aggregate(n=Count("pk"), first=Min("created_at"), last=Max("created_at"))
        versions = sorted(set(current.values_list("model_version", flat=True)) - {""})
        models = sorted(set(current.values_list("model", flat=True)) - {""})
        hashes = current.exclude(prompt_hash="").values("prompt_hash").distinct().count()
        if rater.kind == MachineRater.Kind.LLM:
            sources = {
                "samples" if s == "agreement" else str(s)
                for s in current.filter(confidence__isnull=False)
                .values_list("parameters__confidence_from", flat=True)
                .distinct()
                if s
            }
            forms = set(current.values_list("parameters__response_format", flat=True).distinct())
        else:
            sources = (
                {"probability"} if current.filter(confidence__isnull=False).exists() else set()
            )
            forms = set()
        validation = {k: v for k, v in figures[rater.name].items() if k not in ("name", "kind")}
        out.append(
            {
                "name": rater.name,
                "kind": rater.kind,
                "model": rater.model
                or (MODEL_NAME if rater.kind == MachineRater.Kind.CLASSIFIER else ""),
                "models_in_labels": models,
                "version": rater.version,
                "model_versions_in_labels": versions,
                "prompt": prompt_of(rater),
                "distinct_prompt_hashes": hashes,
                "parameters": parameters_of(rater),
                "created_at": _iso(rater.created_at),
                "trained_at": _iso(rater.trained_at),
                "trained_on": rater.trained_on,
                "current_labels": dates["n"],
                "first_label_at": _iso(dates["first"]),
                "last_label_at": _iso(dates["last"]),
                "validation": validation,
                "enlisted": rater.enlisted,
                "confidence_threshold": rater.confidence_threshold,
                "confidence_from": sorted(sources),
                "output_formats": sorted(str(f) for f in forms if f),
                "estimates": release_estimates(rater),
            }
        )
    return out
