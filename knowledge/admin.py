from django.contrib import admin

from knowledge.models import GroupingAction, Problem, ProblemOccurrence, Runbook


class OccurrenceInline(admin.TabularInline):
    model = ProblemOccurrence
    extra = 0
    fields = ["incident", "seen_at", "job_id", "cluster"]
    readonly_fields = fields
    can_delete = False


@admin.register(Problem)
class ProblemAdmin(admin.ModelAdmin):
    list_display = ["title", "team", "category", "status", "occurrences", "last_seen"]
    list_filter = ["status", "category", "team"]
    search_fields = ["title", "exception", "fingerprint", "resolution"]
    readonly_fields = ["fingerprint", "first_seen", "last_seen", "occurrences", "resolved_by", "resolved_at",
                       "regressed_at", "regressions", "merged_into"]
    inlines = [OccurrenceInline]


@admin.register(GroupingAction)
class GroupingActionAdmin(admin.ModelAdmin):
    list_display = ["kind", "team", "source", "target", "actor", "created_at", "undone_at"]
    readonly_fields = ["kind", "team", "source", "target", "incident_ids", "hash_ids", "actor", "created_at",
                       "undone_at", "undone_by"]


@admin.register(Runbook)
class RunbookAdmin(admin.ModelAdmin):
    list_display = ["category", "team", "updated_by", "updated_at"]
