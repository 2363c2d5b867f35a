"""The knowledge base for tools: /api/v1/problems/, /api/v1/knowledge/... (routed by knowledge.api_urls).

Same auth, team isolation (others' rows answer 404), error format and pagination as jobs.api.
Roles (knowledge.roles): a read key or a viewer reads; a write key or a member also resolves and
renames; admins (signed-in sessions) also merge, split, undo, edit runbooks and import.
"""
import json

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.parsers import JSONParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs.api.pagination import IncidentPagination
from jobs.api.permissions import KeyScopeAllows
from jobs.api.scoping import TeamScopedMixin, TeamScopedViewSet
from jobs.api.views import ERRORS
from jobs.listing import query_filters
from jobs.models import ApiKey, Incident, Team
from knowledge import markdown, roles, search, services, transfer
from knowledge.models import GroupingAction, Problem
from knowledge.runbooks import DEFAULT_RUNBOOKS

WRITABLE = ("status", "resolution", "title", "fix_kind", "fix_summary")


def _user(request):
    # An API key acts for its team, not for a person: the time is recorded, the author is not.
    return None if isinstance(request.auth, ApiKey) else request.user


def _require(request, team_id, what: str):
    if not roles.may(request.user, team_id, what, request.auth):
        raise exceptions.PermissionDenied("Your role in this team does not allow that.")


class KnownProblemSerializer(serializers.ModelSerializer):
    """A failure the team has seen: incidents whose grouping hashes lead to one problem."""

    # One serializer reads and PATCHes, so that the status enum has a single name in the schema.
    url = serializers.HyperlinkedIdentityField(view_name="knowledge-api:problem-detail")
    resolved_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True,
        help_text="Who last set the status or resolution; null when it was an API key.",
    )
    resolution_html = serializers.SerializerMethodField(help_text="The resolution rendered and sanitised.")

    class Meta:
        model = Problem
        fields = ["id", "url", "title", "title_edited", "category", "exception", "fingerprint", "status",
                  "resolution", "resolution_html", "fix_kind", "fix_summary", "resolved_by", "resolved_at",
                  "regressed_at", "regressions", "merged_into", "occurrences", "first_seen", "last_seen"]
        read_only_fields = [name for name in fields if name not in WRITABLE]
        extra_kwargs = {"resolution": {"max_length": 20_000}, "fix_summary": {"max_length": 2000},
                        "title": {"allow_blank": True, "required": False}}

    def get_resolution_html(self, problem) -> str:
        return markdown.render(problem.resolution)


class ProblemFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=Problem.Status.choices, required=False)
    category = serializers.CharField(required=False, max_length=40)
    cluster = serializers.CharField(required=False, max_length=100)
    since = serializers.DateField(required=False, help_text="Last seen on or after this day.")
    until = serializers.DateField(required=False, help_text="First seen on or before this day.")
    q = serializers.CharField(required=False, max_length=200,
                              help_text="Full-text search over the problem and its incidents.")


class MergeSerializer(serializers.Serializer):
    problems = serializers.ListField(child=serializers.IntegerField(min_value=1), min_length=1, max_length=100,
                                     help_text="Problems of the same team to merge into this one.")


class SplitSerializer(serializers.Serializer):
    incidents = serializers.ListField(child=serializers.IntegerField(min_value=1), min_length=1, max_length=1000,
                                      help_text="Incidents of this problem to move into a new problem.")
    title = serializers.CharField(required=False, allow_blank=True, max_length=200)


class GroupingActionSerializer(serializers.ModelSerializer):
    actor = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    undone_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = GroupingAction
        fields = ["id", "kind", "source", "target", "incident_ids", "actor", "created_at", "undone_at", "undone_by"]
        read_only_fields = fields


@extend_schema(tags=["problems"])
class ProblemViewSet(TeamScopedViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    """The team's knowledge base: problems newest-seen first; other teams' problems answer 404."""

    scoped_model = Problem
    pagination_class = IncidentPagination
    parser_classes = [JSONParser]
    serializer_class = KnownProblemSerializer
    http_method_names = ["get", "patch", "post", "head", "options"]

    def get_queryset(self):
        return super().get_queryset().select_related("resolved_by").order_by("-last_seen", "-id")

    def filter_queryset(self, queryset):
        if self.action != "list":
            return queryset
        wanted = query_filters(ProblemFilterSerializer(data=self.request.query_params))
        return Problem.objects.search(self.team_ids(), search.Filters(**wanted))

    @extend_schema(parameters=[ProblemFilterSerializer], responses={200: KnownProblemSerializer(many=True), **ERRORS})
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(responses={200: KnownProblemSerializer, **ERRORS})
    def retrieve(self, request, *args, **kwargs):
        return super().retrieve(request, *args, **kwargs)

    @extend_schema(summary="Set a problem's status, resolution (Markdown), fix that worked or title",
                   responses={200: KnownProblemSerializer, **ERRORS})
    def partial_update(self, request, *args, **kwargs):
        problem = self.get_object()
        _require(request, problem.team_id, roles.RESOLVE)
        form = self.get_serializer(problem, data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        values = form.validated_data
        if "title" in values:
            services.rename(problem, values["title"])
        if {"status", "resolution", "fix_kind", "fix_summary"} & set(values):
            services.update(problem, user=_user(request), status=values.get("status", problem.status),
                            resolution=values.get("resolution", problem.resolution),
                            fix_kind=values.get("fix_kind"), fix_summary=values.get("fix_summary"))
        return Response(self.get_serializer(problem).data)

    @extend_schema(summary="Merge other problems into this one (team admins)", request=MergeSerializer,
                   responses={200: GroupingActionSerializer(many=True), **ERRORS})
    @action(detail=True, methods=["post"])
    def merge(self, request, pk=None):
        problem = self.get_object()
        _require(request, problem.team_id, roles.MERGE)
        form = MergeSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        ids = sorted(set(form.validated_data["problems"]) - {problem.pk})
        sources = list(Problem.objects.filter(team_id=problem.team_id, pk__in=ids).live())
        if not ids or len(sources) != len(ids):
            raise exceptions.ValidationError({"problems": ["Only other, unmerged problems of this team."]})
        actions = services.merge(problem, sources, user=_user(request))
        return Response(GroupingActionSerializer(actions, many=True).data)

    @extend_schema(summary="Split incidents off into a new problem (team admins)", request=SplitSerializer,
                   responses={201: KnownProblemSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def split(self, request, pk=None):
        problem = self.get_object()
        _require(request, problem.team_id, roles.MERGE)
        form = SplitSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            new, _ = services.split(problem, form.validated_data["incidents"], user=_user(request),
                                    title=form.validated_data.get("title", ""))
        except services.GroupingError as error:
            raise exceptions.ValidationError({"incidents": [str(error)]}) from error
        return Response(self.get_serializer(new).data, status=status.HTTP_201_CREATED)

    @extend_schema(summary="Merges and splits that touched this problem",
                   responses={200: GroupingActionSerializer(many=True), **ERRORS})
    @action(detail=True, methods=["get"])
    def changes(self, request, pk=None):
        from django.db.models import Q

        problem = self.get_object()
        rows = GroupingAction.objects.filter(Q(source=problem) | Q(target=problem)).select_related("actor", "undone_by")
        return Response(GroupingActionSerializer(rows[:100], many=True).data)


@extend_schema(tags=["problems"])
class GroupingActionViewSet(TeamScopedViewSet):
    scoped_model = GroupingAction
    serializer_class = GroupingActionSerializer

    @extend_schema(summary="Undo a merge or split (team admins)", request=None,
                   responses={200: GroupingActionSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def undo(self, request, pk=None):
        change = self.get_object()
        _require(request, change.team_id, roles.MERGE)
        try:
            services.undo(change, user=_user(request))
        except services.GroupingError as error:
            raise exceptions.ValidationError({"detail": [str(error)]}) from error
        change.refresh_from_db()
        return Response(GroupingActionSerializer(change).data)


class SearchFilterSerializer(serializers.Serializer):
    q = serializers.CharField(required=False, allow_blank=True, max_length=200,
                              help_text="Words to find in exception, message, evidence, job id, titles and resolutions.")
    category = serializers.CharField(required=False, allow_blank=True, max_length=40)
    status = serializers.ChoiceField(choices=Problem.Status.choices, required=False, help_text="The problem's status.")
    cluster = serializers.CharField(required=False, allow_blank=True, max_length=100)
    since = serializers.DateField(required=False)
    until = serializers.DateField(required=False)


class SearchIncidentSerializer(serializers.Serializer):
    incident = serializers.IntegerField(source="incident_id")
    problem = serializers.IntegerField(source="problem_id")
    job_id = serializers.CharField()
    cluster = serializers.CharField()
    category = serializers.CharField()
    exception = serializers.CharField()
    message = serializers.CharField()
    seen_at = serializers.DateTimeField()


class SearchResultSerializer(serializers.Serializer):
    engine = serializers.CharField(help_text="'postgresql full-text' or 'substring' (SQLite).")
    problems = KnownProblemSerializer(many=True)
    incidents = SearchIncidentSerializer(many=True)


class SearchView(TeamScopedMixin, APIView):
    permission_classes = [IsAuthenticated, KeyScopeAllows]

    @extend_schema(tags=["knowledge"], summary="Search incidents and problems",
                   parameters=[SearchFilterSerializer], responses={200: SearchResultSerializer, **ERRORS})
    def get(self, request):
        wanted = query_filters(SearchFilterSerializer(data=request.query_params))
        results = search.search(self.team_ids(), search.Filters(**wanted))
        return Response(SearchResultSerializer(results, context={"request": request}).data)


class SimilarSerializer(serializers.Serializer):
    incident = serializers.IntegerField(source="incident_id")
    problem = serializers.IntegerField(source="problem_id")
    problem_title = serializers.CharField()
    problem_status = serializers.CharField()
    job_id = serializers.CharField()
    seen_at = serializers.DateTimeField()
    score = serializers.FloatField(help_text="Similarity of the evidence, 0-100.")


class RecognitionSerializer(serializers.Serializer):
    problem = KnownProblemSerializer(allow_null=True)
    known = serializers.BooleanField(help_text="The team saw it before or wrote down a resolution.")
    previous = serializers.DateTimeField(allow_null=True, help_text="When another incident of the problem was last seen.")
    similar = SimilarSerializer(many=True, help_text="When the problem is new: the closest past incidents.")
    runbook = serializers.DictField(help_text="category, title, body (Markdown) and whether the team edited it.")


class RecognitionView(TeamScopedMixin, APIView):
    permission_classes = [IsAuthenticated, KeyScopeAllows]

    @extend_schema(tags=["knowledge"], summary="What the knowledge base knows about an incident",
                   responses={200: RecognitionSerializer, **ERRORS})
    def get(self, request, incident_id: int):
        incident = self.team_rows(Incident).filter(pk=incident_id).first()
        if incident is None:
            raise exceptions.NotFound("No such incident in your team.")
        known = services.recognise(incident)
        book = known["runbook"]
        known["runbook"] = {"category": book["category"], "title": book["title"], "body": book["body"],
                            "edited": book["edited"]}
        return Response(RecognitionSerializer(known, context={"request": request}).data)


class RunbookSerializer(serializers.Serializer):
    category = serializers.CharField(read_only=True)
    title = serializers.CharField(read_only=True)
    body = serializers.CharField(max_length=20_000, help_text="Markdown.")
    edited = serializers.BooleanField(read_only=True, help_text="False: the version shipped with Triage.")


class RunbookView(TeamScopedMixin, APIView):
    permission_classes = [IsAuthenticated, KeyScopeAllows]
    parser_classes = [JSONParser]

    def _team(self, request) -> Team:
        return self.submitting_team()

    @extend_schema(tags=["knowledge"], summary="The team's runbook for a category",
                   responses={200: RunbookSerializer, **ERRORS})
    def get(self, request, category: str):
        if category not in DEFAULT_RUNBOOKS:
            raise exceptions.NotFound("No such category.")
        return Response(RunbookSerializer(services.runbook_for(self._team(request).pk, category)).data)

    @extend_schema(tags=["knowledge"], summary="Replace the team's runbook for a category (team admins)",
                   request=RunbookSerializer, responses={200: RunbookSerializer, **ERRORS})
    def put(self, request, category: str):
        from knowledge.models import Runbook

        if category not in DEFAULT_RUNBOOKS:
            raise exceptions.NotFound("No such category.")
        team = self._team(request)
        _require(request, team.pk, roles.RUNBOOK)
        form = RunbookSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        Runbook.objects.update_or_create(team=team, category=category,
                                         defaults={"body": form.validated_data["body"], "updated_by": _user(request)})
        return Response(RunbookSerializer(services.runbook_for(team.pk, category)).data)


class ExportView(TeamScopedMixin, APIView):
    permission_classes = [IsAuthenticated, KeyScopeAllows]

    @extend_schema(tags=["knowledge"], summary="Export the team's problems, resolutions and runbooks as JSON",
                   responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request):
        return Response(transfer.export_team(self.submitting_team()))


class ImportView(TeamScopedMixin, APIView):
    permission_classes = [IsAuthenticated, KeyScopeAllows]
    parser_classes = [JSONParser]

    @extend_schema(tags=["knowledge"], summary="Import an export into the team (team admins); all or nothing",
                   request=OpenApiTypes.OBJECT,
                   responses={200: OpenApiResponse(description="{problems_created, problems_updated, runbooks}"),
                              **ERRORS})
    def post(self, request):
        team = self.submitting_team()
        _require(request, team.pk, roles.IMPORT)
        document = request.data
        if isinstance(document, str | bytes):
            document = json.loads(document)
        try:
            counts = transfer.import_team(team, document, user=_user(request))
        except transfer.TransferError as error:
            raise exceptions.ValidationError({"detail": [str(error)]}) from error
        return Response(counts)
