from django.contrib import admin

from taxonomy.models import NodeLineage, Taxonomy, TaxonomyNode, TaxonomyVersion


@admin.register(Taxonomy)
class TaxonomyAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at"]


@admin.register(TaxonomyVersion)
class TaxonomyVersionAdmin(admin.ModelAdmin):
    """Where an administrator publishes a version to the global taxonomy page."""

    list_display = ["__str__", "origin", "project", "is_published", "created_at", "created_by"]
    list_editable = ["is_published"]
    list_filter = ["is_published", "origin", "taxonomy"]
    raw_id_fields = ["parent", "project"]


@admin.register(TaxonomyNode)
class TaxonomyNodeAdmin(admin.ModelAdmin):
    list_display = ["code", "name", "level", "version"]
    list_filter = ["version", "level"]
    search_fields = ["code", "name", "description"]
    raw_id_fields = ["parent"]


@admin.register(NodeLineage)
class NodeLineageAdmin(admin.ModelAdmin):
    list_display = ["__str__", "version", "kind"]
    list_filter = ["kind"]
    raw_id_fields = ["old_node", "new_node"]
