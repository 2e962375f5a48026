"""A taxonomy is versioned data: a tree of issue types, themes and sub-themes.

Each `TaxonomyVersion` holds a complete tree of `TaxonomyNode`s; a project pins one version,
and annotations point at nodes of that version, so a label always says which taxonomy it was
made under.

Versions are history that belongs to projects: a version made by a project's edit or import
names that project, and only that project's members see it (`labeling.taxonomy_history`).
The study's taxonomy, loaded from its CSV files, and versions an administrator publishes are
what every signed-in user sees on the global taxonomy page.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class Taxonomy(models.Model):
    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("taxonomy")
        verbose_name_plural = _("taxonomies")

    def __str__(self) -> str:
        return self.name

    def latest_version(self) -> TaxonomyVersion | None:
        return self.versions.order_by("-number").first()


class TaxonomyVersion(models.Model):
    class Origin(models.TextChoices):
        STUDY = "study", _("loaded from taxonomy detail CSV files (load_taxonomy)")
        IMPORTED = "imported", _("imported from a taxonomy JSON file")
        EDITED = "edited", _("made by an edit of a project's taxonomy")

    taxonomy = models.ForeignKey(Taxonomy, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    note = models.TextField(blank=True, help_text=_("What changed in this version and why."))
    source = models.CharField(max_length=500, blank=True, help_text=_("Where the data came from."))
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        "auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.IMPORTED)
    # The project whose edit or import made this version: part of that project's history only.
    project = models.ForeignKey(
        "annotator.Project",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="taxonomy_versions_made",
    )
    is_published = models.BooleanField(
        default=False,
        help_text=_("On the global taxonomy page for every user; set by an admin."),
    )

    class Meta:
        verbose_name = _("taxonomy version")
        verbose_name_plural = _("taxonomy versions")
        ordering = ["taxonomy", "number"]
        constraints = [
            models.UniqueConstraint(fields=["taxonomy", "number"], name="unique_taxonomy_version")
        ]

    def __str__(self) -> str:
        return f"{self.taxonomy.name} v{self.number}"

    def types(self) -> models.QuerySet[TaxonomyNode]:
        return self.nodes.filter(level=TaxonomyNode.Level.TYPE)


class TaxonomyNode(models.Model):
    class Level(models.IntegerChoices):
        TYPE = 1, _("issue type")
        THEME = 2, _("theme")
        SUB_THEME = 3, _("sub-theme")

    version = models.ForeignKey(TaxonomyVersion, on_delete=models.CASCADE, related_name="nodes")
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )
    level = models.PositiveSmallIntegerField(choices=Level.choices)
    code = models.CharField(max_length=32, help_text=_("A, A.1, A.1.i …"))
    name = models.CharField(max_length=300)
    description = models.TextField(blank=True)
    # The description in other languages, by language code ({"zh-hans": "…"}): an addition
    # beside the English as written, shown only where a project chooses (`taxonomy.texts`).
    descriptions = models.JSONField(default=dict, blank=True)
    # The example details annotators wrote: symptoms, question intents, feature expectations.
    details = models.JSONField(default=list, blank=True)
    position = models.PositiveIntegerField(default=0)
    # Where a sub-theme was read from a detail CSV, so the file can be written back as it was:
    # its row there (the paper numbers some sub-themes in another order than the rows), and,
    # for a row whose details spilled over several CSV cells, how many details each cell held.
    source_row = models.PositiveIntegerField(null=True, blank=True)
    detail_cells = models.JSONField(default=list, blank=True)

    class Meta:
        verbose_name = _("taxonomy node")
        verbose_name_plural = _("taxonomy nodes")
        ordering = ["version", "level", "position"]
        constraints = [
            models.UniqueConstraint(fields=["version", "code"], name="unique_node_code_per_version")
        ]
        indexes = [models.Index(fields=["version", "level"])]

    def __str__(self) -> str:
        return f"{self.code} {self.name}"

    @property
    def issue_type(self) -> TaxonomyNode:
        """The type (level 1) this node belongs to."""
        node = self
        while node.parent is not None:
            node = node.parent
        return node


class NodeLineage(models.Model):
    """One edge from a node of a version to a node of the version made from it.

    Every edit copies the whole tree, so each node of the old version has at least one edge to
    the new one; following edges forward or backward maps a label made under one version to any
    other version of the same taxonomy, while the label keeps its original foreign key.
    """

    class Kind(models.TextChoices):
        COPY = "copy", _("unchanged")
        RENAME = "rename", _("renamed")
        MOVE = "move", _("moved")
        MERGE = "merge", _("merged into")
        SPLIT = "split", _("split off into")
        EDIT = "edit", _("description or details changed")

    # The version the edge leads into (the new one); its parent is the old node's version.
    version = models.ForeignKey(TaxonomyVersion, on_delete=models.CASCADE, related_name="lineage")
    old_node = models.ForeignKey(TaxonomyNode, on_delete=models.CASCADE, related_name="successors")
    new_node = models.ForeignKey(
        TaxonomyNode, on_delete=models.CASCADE, related_name="predecessors"
    )
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.COPY)

    class Meta:
        verbose_name = _("node lineage")
        verbose_name_plural = _("node lineages")
        constraints = [
            models.UniqueConstraint(fields=["old_node", "new_node"], name="unique_lineage_edge")
        ]
        indexes = [models.Index(fields=["version", "old_node"])]

    def __str__(self) -> str:
        return f"{self.old_node.code} → {self.new_node.code} ({self.kind})"
