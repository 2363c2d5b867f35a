from django.contrib import admin

from knowledge.models import Problem, ProblemOccurrence


class OccurrenceInline(admin.TabularInline):
    model = ProblemOccurrence
    extra = 0
    fields = ["incident", "created_at"]
    readonly_fields = fields
    can_delete = False


@admin.register(Problem)
class ProblemAdmin(admin.ModelAdmin):
    list_display = ["title", "team", "category", "status", "occurrences", "last_seen"]
    list_filter = ["status", "category", "team"]
    search_fields = ["title", "exception", "fingerprint", "resolution"]
    readonly_fields = ["fingerprint", "first_seen", "last_seen", "occurrences", "resolved_by", "resolved_at"]
    inlines = [OccurrenceInline]
