from django.contrib import admin

from taxonomy.models import NodeLineage, Taxonomy, TaxonomyNode, TaxonomyVersion


@admin.register(Taxonomy)
class TaxonomyAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at"]


@admin.register(TaxonomyVersion)
class TaxonomyVersionAdmin(admin.ModelAdmin):
    list_display = ["__str__", "created_at", "created_by", "note"]
    list_filter = ["taxonomy"]


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
