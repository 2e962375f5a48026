"""The pluggable interface every kind of machine rater implements, and the one label rule.

A backend turns issue texts into labels. The runner (`raters.runs`) gathers what a backend
needs into a `LabelRequest` and stores what it yields; a backend never touches the database.

To add a kind:

1. add the kind to `MachineRater.Kind` and its class's dotted path to `BACKEND_PATHS` below;
2. write the class: `__init__(self, rater: MachineRater)`; a class attribute `trains` (True if
   it learns from the project's final labels, as the classifier does: the runner then records
   `trained_on`, `trained_at` and bumps `version`, and passes every final issue's text);
   optionally `reads_finals` (True: `request.finals` is filled without training, as for the
   llm's few-shot examples, whose texts it asks for with `request.fetch_texts`) and
   `store_every` (how many predictions the runner stores at once; 1 for a slow backend, so
   a run that stops loses nothing and resumes from the issues not labeled yet); and
   `label(self, request: LabelRequest) -> Iterator[Prediction]`, one `Prediction` per item of
   `request.items`, in any order, calling `request.progress(done)` now and then (the
   run's heartbeat is written by a thread of its own, `lib.jobs.Heartbeat`, however long the
   backend computes or waits); what it finds out about
   its endpoint for the whole run goes to `request.record(fields)` (`RaterRun.output_format`,
   `served_model`, `confidence_from`, `endpoint`);
3. return an unreadable output as `Prediction(code=None, raw_output=...)`: it is stored with
   `valid=False` and counted in the validation's invalid-output rate, never dropped. A code
   the project's taxonomy does not know is turned invalid by the runner too.

A prediction's `code` is a taxonomy code at any level ("C", "C.3", "C.3.ii") or "FP" (a false
positive, `labeling.labels.FP`). The rules "an issue's label at type / theme level" are
`type_code` and `theme_code` here, used for training targets, validation and exports alike.

Blindness: a backend sees issue text and, for training, final labels only; never an
annotator's label of an open issue.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from django.utils.module_loading import import_string

from labeling.labels import FP
from lib import stored_messages

if TYPE_CHECKING:
    from labeling.models import MachineRater

FP_CODE: str = FP[0]

BACKEND_PATHS: dict[str, str] = {
    "classifier": "raters.classifier.ClassifierBackend",
    "llm": "raters.llm.LLMBackend",
}


def type_code(code: str) -> str:
    """A label's code at type level: "FP", or the type of "C.3.ii" ("C"); "" for none."""
    return code if code in (FP_CODE, "") else code.split(".")[0]


def theme_code(code: str) -> str:
    """A label's code at theme level: "FP", the theme of "C.3.ii" ("C.3"), or the type when
    the label has no theme."""
    return code if code in (FP_CODE, "") else ".".join(code.split(".")[:2])


@dataclass(frozen=True)
class IssueText:
    issue_id: int
    url: str
    text: str  # title, body and the first comments (`raters.texts`)


@dataclass(frozen=True)
class NodeText:
    """One taxonomy node as a prompt shows it: code, name, description and example details."""

    code: str
    name: str
    description: str = ""
    details: tuple[str, ...] = ()


def _no_texts(ids: Iterable[int]) -> dict[int, str]:
    return {}


def _ignore(fields: dict[str, Any]) -> None:
    return None


@dataclass
class LabelRequest:
    """What a backend is given: the items to label, and the project's final labels (theme-level
    codes by issue id) for a backend that learns from them."""

    project_id: int
    items: Sequence[IssueText]
    finals: dict[int, str]
    # The issue texts of the final issues (training data), by issue id.
    final_texts: dict[int, str] = field(default_factory=dict)
    # The codes the project's taxonomy knows (types, themes, sub-themes) and their names.
    codes: dict[str, str] = field(default_factory=dict)
    progress: Callable[[int], None] = lambda done: None
    # The taxonomy as a prompt shows it (types, themes, sub-themes in order), its version's id,
    # and the project's guideline (Markdown, as the leads wrote it).
    taxonomy: Sequence[NodeText] = ()
    taxonomy_version: int = 0
    guideline: str = ""
    # Texts of the given issues (final issues only: few-shot examples), read on demand.
    fetch_texts: Callable[[Iterable[int]], dict[int, str]] = _no_texts
    # What the backend found out about the run's endpoint (`RUN_FIELDS`), recorded on the run.
    record: Callable[[dict[str, Any]], None] = _ignore


# What a backend may record on its run (`LabelRequest.record`).
RUN_FIELDS = ("output_format", "served_model", "confidence_from", "endpoint")


@dataclass
class Prediction:
    issue_id: int
    code: str | None  # None: the output could not be read as a label
    confidence: float | None = None
    raw_output: str = ""
    prompt_hash: str = ""
    model: str = ""
    model_version: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    fold: int | None = None
    # Tokens the endpoint counted for this label (summed per run).
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Backend(Protocol):
    trains: bool

    def label(self, request: LabelRequest) -> Iterator[Prediction]: ...


class BackendError(Exception):
    """A rater that cannot run (too few final labels, a missing setting, an endpoint that
    refuses the key): said in words, never with a secret in them.

    One made by `translatable` keeps its msgid and parameters, so the run stores it to be read
    in each reader's language (`lib.stored_messages`); `str()` is its English text."""

    def __init__(self, message: str, *, msgid: str = "", params: dict | None = None) -> None:
        super().__init__(message)
        self.msgid = msgid
        self.params: dict = params or {}

    @classmethod
    def translatable(cls, msgid: str, **params: str | int | float) -> BackendError:
        """`msgid` marked with `gettext_noop`, its `%(name)s` placeholders filled from params."""
        return cls(msgid % params, msgid=msgid, params=params)

    def stored(self) -> str:
        """What a run stores as its error: the msgid and parameters when there are some."""
        return stored_messages.dump(self.msgid, **self.params) if self.msgid else str(self)


class KeyRefused(BackendError):
    """The endpoint refused the key (401) or what it may do (403)."""


def backend_for(rater: MachineRater) -> Backend:
    """The backend of the rater's kind (imported on use: scikit-learn is heavy)."""
    path = BACKEND_PATHS.get(rater.kind)
    if path is None:
        raise BackendError(f"kind: no backend for {rater.kind!r} yet")
    return import_string(path)(rater)
