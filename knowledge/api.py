"""GET /api/v1/problems/ and GET/PATCH /api/v1/problems/{id}/: the team's knowledge base for tools.

Same auth, team isolation (others' problems answer 404), error format and pagination as jobs.api.
"""
from django.db.models import Q
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.parsers import JSONParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from jobs.api.pagination import IncidentPagination
from jobs.api.permissions import KeyScopeAllows
from jobs.api.views import ERRORS, TeamScopedMixin
from jobs.models import ApiKey
from knowledge import services
from knowledge.models import Problem


class KnownProblemSerializer(serializers.ModelSerializer):
    """A failure the team has seen: its incidents share one engine fingerprint."""

    # One serializer reads and PATCHes, so that the status enum has a single name in the schema.
    url = serializers.HyperlinkedIdentityField(view_name="api:problem-detail")
    resolved_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True,
        help_text="Who last set the status or resolution; null when it was an API key.",
    )

    class Meta:
        model = Problem
        fields = ["id", "url", "title", "category", "exception", "fingerprint", "status", "resolution",
                  "resolved_by", "resolved_at", "occurrences", "first_seen", "last_seen"]
        read_only_fields = [name for name in fields if name not in ("status", "resolution")]
        extra_kwargs = {"resolution": {"max_length": 20_000}}


class ProblemFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=Problem.Status.choices, required=False)
    category = serializers.CharField(required=False, max_length=40)
    q = serializers.CharField(required=False, max_length=200, help_text="Search title, exception and resolution.")


@extend_schema(tags=["problems"])
class ProblemViewSet(TeamScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The team's knowledge base: problems newest-seen first; other teams' problems answer 404."""

    permission_classes = [IsAuthenticated, KeyScopeAllows]
    pagination_class = IncidentPagination
    parser_classes = [JSONParser]
    lookup_value_regex = "[0-9]+"

    def get_queryset(self):
        return self.team_rows(Problem).select_related("resolved_by").order_by("-last_seen", "-id")

    serializer_class = KnownProblemSerializer
    http_method_names = ["get", "patch", "head", "options"]

    def filter_queryset(self, queryset):
        if self.action != "list":
            return queryset
        filters = ProblemFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        wanted = filters.validated_data
        for name in ("status", "category"):
            if name in wanted:
                queryset = queryset.filter(**{name: wanted[name]})
        if wanted.get("q"):
            query = wanted["q"]
            queryset = queryset.filter(Q(title__icontains=query) | Q(exception__icontains=query)
                                       | Q(resolution__icontains=query))
        return queryset

    @extend_schema(parameters=[ProblemFilterSerializer], responses={200: KnownProblemSerializer(many=True), **ERRORS})
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(responses={200: KnownProblemSerializer, **ERRORS})
    def retrieve(self, request, *args, **kwargs):
        return super().retrieve(request, *args, **kwargs)

    @extend_schema(summary="Set a problem's status and resolution (plain text)",
                   responses={200: KnownProblemSerializer, **ERRORS})
    def partial_update(self, request, *args, **kwargs):
        problem = self.get_object()
        form = self.get_serializer(problem, data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        values = form.validated_data
        # An API key acts for its team, not for a person: the time is recorded, the resolver is not.
        user = None if isinstance(request.auth, ApiKey) else request.user
        services.update(problem, user=user, status=values.get("status", problem.status),
                        resolution=values.get("resolution", problem.resolution))
        return Response(self.get_serializer(problem).data)
