"""The label audit's hand-built scenario, shared by its page, command and browser tests.

Two careful annotators (Ana and Omar) and a careless one (Tia) label twelve issues. On issue
#103 the lead's final label is B.2 although every annotator chose a C theme; #111 is the pilot.
"""

from __future__ import annotations

from annotator.models import Membership, Project, Role
from ingest.models import Repository
from labeling.models import Annotation, ProjectIssue, Resolution
from taxonomy.models import TaxonomyNode
from tests.conftest import make_issue, make_user

# Issue number -> (Ana, Omar, Tia, final). The careful two agree on every issue; Tia is right
# on four of twelve. #103 carries the planted final label; #111 is the pilot.
LABELS = {
    100: ("C.1", "C.1", "C.2", "C.1"),
    101: ("C.1", "C.1", "C.3", "C.1"),
    102: ("C.2", "C.2", "C.2", "C.2"),
    103: ("C.1", "C.1", "C.2", "B.2"),
    104: ("C.3", "C.3", "C.1", "C.3"),
    105: ("B.1", "B.1", "C.1", "B.1"),
    106: ("B.1", "B.1", "B.1", "B.1"),
    107: ("C.2", "C.2", "B.1", "C.2"),
    108: ("C.3", "C.3", "C.3", "C.3"),
    109: ("FP", "FP", "C.1", "FP"),
    110: ("C.1", "C.1", "C.3", "C.1"),
    111: ("C.2", "C.2", "C.2", "C.2"),
}
PILOT = {111}


def label_fields(project: Project, code: str, nodes: dict[str, TaxonomyNode] | None = None) -> dict:
    if code == "FP":
        return {"is_false_positive": True, "false_positive_reason": "keyword_in_names"}
    theme = (nodes or version_nodes(project))[code]
    return {"issue_type": theme.parent, "theme": theme}


def version_nodes(project: Project) -> dict[str, TaxonomyNode]:
    """The project's taxonomy by code, with each node's parent: one query for every label."""
    nodes = TaxonomyNode.objects.filter(version_id=project.taxonomy_version_id)
    return {node.code: node for node in nodes.select_related("parent")}


def careless_annotator(project: Project):
    user = make_user("tia-annotator")
    Membership.objects.create(
        project=project, user=user, role=Role.ANNOTATOR, pseudonym="rater-careless"
    )
    return user


def build_audited_project(
    project: Project, repository: Repository, lead, raters: list
) -> dict[int, ProjectIssue]:
    """The LABELS as current annotations and final labels; the queue items by issue number."""
    items = {}
    nodes = version_nodes(project)
    for number, (*labels, final) in LABELS.items():
        issue = make_issue(repository, number)
        pilot = number in PILOT
        items[number] = ProjectIssue.objects.create(
            project=project,
            issue=issue,
            position=number,
            is_pilot=pilot,
            status=ProjectIssue.Status.FINAL,
        )
        for user, code in zip(raters, labels, strict=True):
            Annotation.objects.create(
                project=project,
                issue=issue,
                annotator=user,
                is_pilot=pilot,
                **label_fields(project, code, nodes),
            )
        Resolution.objects.create(
            project=project,
            issue=issue,
            method=Resolution.Method.LEAD_DECISION,
            decided_by=lead,
            **label_fields(project, final, nodes),
        )
    return items
