"""The scheduler-facing API. Team isolation lives in jobs.api.scoping (TeamScopedViewSet), nowhere else."""
import re

from django.conf import settings
from django.db import IntegrityError
from django.http import FileResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import exceptions, mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response

from jobs.api import serializers as api
from jobs.api.errors import PayloadTooLarge
from jobs.api.pagination import IncidentPagination
from jobs.api.permissions import SessionAdminsManage
from jobs.api.scoping import TeamScopedMixin, TeamScopedViewSet  # noqa: F401 - TeamScopedMixin: importable here
from jobs.listing import filter_rows, query_filters
from jobs.models import ApiKey, Incident, WebhookEndpoint

IDEMPOTENCY_HEADER = "Idempotency-Key"
IDEMPOTENCY_KEY_RE = re.compile(r"^[\x21-\x7e]{1,200}$")
# Headroom for the multipart envelope and the small text fields around the files.
ENVELOPE_BYTES = 1024 * 1024

ERRORS = {
    400: OpenApiResponse(description="Invalid request: {\"error\": {\"code\", \"message\", \"field\"}}"),
    401: OpenApiResponse(description="Missing, invalid, expired or revoked API key."),
    403: OpenApiResponse(description="Not allowed (e.g. a read-only key submitting)."),
    404: OpenApiResponse(description="No such object in your team."),
    429: OpenApiResponse(description="Too many requests; see Retry-After."),
}


class BinaryRenderer(BaseRenderer):
    media_type = "application/octet-stream"
    format = "bin"
    charset = None

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data if isinstance(data, bytes) else JSONRenderer().render(data)


class IncidentFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=Incident.Status.choices, required=False)
    category = serializers.CharField(required=False, max_length=40)
    job_id = serializers.CharField(required=False, max_length=200)
    since = serializers.DateTimeField(required=False, help_text="Only incidents created at or after this time.")


@extend_schema(tags=["incidents"])
class IncidentViewSet(TeamScopedViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    scoped_model = Incident
    pagination_class = IncidentPagination
    parser_classes = [MultiPartParser]

    def get_queryset(self):
        queryset = super().get_queryset().order_by("-created_at", "-id")
        if self.action == "retrieve":
            queryset = queryset.select_related("diagnosis").prefetch_related("webhook_deliveries")
        elif self.action in {"timeline", "memory"}:
            queryset = queryset.select_related("diagnosis")
        return queryset

    def get_serializer_class(self):
        if self.action == "retrieve":
            return api.IncidentDetailSerializer
        if self.action == "create":
            return api.IncidentSubmitSerializer
        return api.IncidentSerializer

    def filter_queryset(self, queryset):
        if self.action != "list":
            return queryset
        wanted = query_filters(IncidentFilterSerializer(data=self.request.query_params))
        return filter_rows(queryset, wanted, exact=("status", "category", "job_id"))

    @extend_schema(parameters=[IncidentFilterSerializer], responses={200: api.IncidentSerializer(many=True), **ERRORS})
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(responses={200: api.IncidentDetailSerializer, **ERRORS})
    def retrieve(self, request, *args, **kwargs):
        return super().retrieve(request, *args, **kwargs)

    @extend_schema(
        summary="Submit a failed job's logs",
        request={"multipart/form-data": api.IncidentSubmitSerializer},
        parameters=[OpenApiParameter(
            IDEMPOTENCY_HEADER, OpenApiTypes.STR, OpenApiParameter.HEADER, required=False,
            description="Makes retries safe: a repeated key answers the first incident. Without it, "
                        "job_id + attempt derive one.",
        )],
        responses={
            202: api.IncidentAcceptedSerializer, **ERRORS,
            413: OpenApiResponse(description="Upload too large."),
            415: OpenApiResponse(description="Not multipart/form-data."),
        },
    )
    def create(self, request, *args, **kwargs):
        content_length = int(request.META.get("CONTENT_LENGTH") or 0)
        if content_length > settings.TRIAGE_UPLOAD_MAX_BYTES + ENVELOPE_BYTES:
            raise PayloadTooLarge(f"The upload is larger than {settings.TRIAGE_UPLOAD_MAX_BYTES} bytes.")
        team = self.submitting_team()
        header_key = self.idempotency_header()
        if header_key and (existing := self._existing(team, header_key)):
            return self.accepted(existing, replayed=True)

        form = api.IncidentSubmitSerializer(data=request.data, context=self.get_serializer_context())
        form.is_valid(raise_exception=True)
        values = form.validated_data
        key = header_key
        if not key and values.get("job_id") and values.get("attempt"):
            key = f"job:{values['job_id']}:attempt:{values['attempt']}"[:200]
        if key and not header_key and (existing := self._existing(team, key)):
            return self.accepted(existing, replayed=True)

        # Imported here so that the read endpoints keep working while the engine behind uploads changes.
        from jobs.uploads import UploadRejected, create_incident

        meta = {name: values.get(name, "") for name in api.META_FIELDS}
        meta["idempotency_key"] = key or None
        try:
            incident = create_incident(
                team=team, user=None if isinstance(request.auth, ApiKey) else request.user,
                logs=values.get("files", []), command=values.get("command", ""),
                config=values.get("config"), data=values.get("data"),
                pasted_log=values.get("pasted_log", ""), meta=meta,
            )
        except UploadRejected as rejection:
            raise _rejection(rejection) from None
        except IntegrityError:
            # A concurrent retry with the same key won the unique constraint: answer its incident.
            existing = self._existing(team, key) if key else None
            if existing is None:
                raise
            return self.accepted(existing, replayed=True)
        return self.accepted(incident)

    def idempotency_header(self) -> str | None:
        value = self.request.headers.get(IDEMPOTENCY_HEADER)
        if value is None or value == "":
            return None
        if not IDEMPOTENCY_KEY_RE.match(value):
            raise exceptions.ValidationError(
                {IDEMPOTENCY_HEADER: ["Use 1 to 200 printable ASCII characters without spaces."]}
            )
        return value

    @staticmethod
    def _existing(team, key):
        return Incident.objects.filter(team=team, idempotency_key=key).first()

    def accepted(self, incident, *, replayed=False):
        body = {"id": incident.pk, "status": incident.status,
                "url": self.request.build_absolute_uri(reverse("api:incident-detail", args=[incident.pk]))}
        headers = {"Location": body["url"]}
        if replayed:
            headers["Idempotent-Replayed"] = "true"
        return Response(body, status=status.HTTP_202_ACCEPTED, headers=headers)

    @extend_schema(responses={200: api.TimelineSerializer, **ERRORS})
    @action(detail=True, methods=["get"])
    def timeline(self, request, pk=None):
        incident = self.get_object()
        data = _diagnosis_data(incident)
        return Response({
            "id": incident.pk, "status": incident.status,
            "world_size": data.get("world_size"), "failing_rank": data.get("failing_rank"),
            "ranks": data.get("ranks") or [],
        })

    @extend_schema(responses={200: api.MemorySerializer, **ERRORS})
    @action(detail=True, methods=["get"])
    def memory(self, request, pk=None):
        incident = self.get_object()
        memory = _diagnosis_data(incident).get("memory") or {}
        return Response({
            "id": incident.pk, "status": incident.status,
            "series": memory.get("series") or [], "estimate": memory.get("estimate"),
        })

    @extend_schema(responses={200: api.ArtifactSerializer(many=True), **ERRORS})
    @action(detail=True, methods=["get"], pagination_class=None)
    def artifacts(self, request, pk=None):
        incident = self.get_object()
        artifacts = incident.artifacts.order_by("kind", "original_name", "id")
        return Response(api.ArtifactSerializer(artifacts, many=True, context={"request": request}).data)

    @extend_schema(
        parameters=[OpenApiParameter("artifact_id", OpenApiTypes.INT, OpenApiParameter.PATH)],
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY, **ERRORS},
    )
    @action(
        detail=True, methods=["get"], url_path=r"artifacts/(?P<artifact_id>[0-9]+)/download",
        url_name="artifact-download", renderer_classes=[JSONRenderer, BinaryRenderer],
    )
    def download(self, request, pk=None, artifact_id=None):
        incident = self.get_object()
        artifact = incident.artifacts.filter(pk=artifact_id).first()
        if artifact is None:
            raise exceptions.NotFound("No such artifact in this incident.")
        try:
            handle = artifact.file.open("rb")
        except (FileNotFoundError, OSError):
            raise exceptions.NotFound("The artifact's file is missing from storage.") from None
        return FileResponse(handle, as_attachment=True, filename=artifact.original_name,
                            content_type="application/octet-stream")


def _diagnosis_data(incident) -> dict:
    diagnosis = getattr(incident, "diagnosis", None)
    return diagnosis.data if diagnosis is not None and isinstance(diagnosis.data, dict) else {}


def _rejection(rejection) -> exceptions.APIException:
    code = getattr(rejection, "code", None) or "invalid"
    message = str(getattr(rejection, "message", None) or rejection)
    field = getattr(rejection, "field", None) or "files"
    field = "files" if field == "logs" else field
    if getattr(rejection, "status", 400) == 413:
        return PayloadTooLarge(message, code=code)
    return exceptions.ValidationError({field: [exceptions.ErrorDetail(message, code=code)]})




@extend_schema(tags=["webhooks"])
@extend_schema_view(
    list=extend_schema(responses={200: api.WebhookEndpointSerializer(many=True), **ERRORS}),
    retrieve=extend_schema(responses={200: api.WebhookEndpointSerializer, **ERRORS}),
    create=extend_schema(request=api.WebhookEndpointSerializer,
                         responses={201: api.WebhookEndpointCreatedSerializer, **ERRORS}),
    partial_update=extend_schema(responses={200: api.WebhookEndpointSerializer, **ERRORS}),
    destroy=extend_schema(responses={204: None, **ERRORS}),
)
class WebhookEndpointViewSet(TeamScopedViewSet, mixins.CreateModelMixin, mixins.RetrieveModelMixin,
                             mixins.UpdateModelMixin, mixins.DestroyModelMixin, mixins.ListModelMixin):
    """The team's standing webhook endpoints; each signs with its own secret, shown once at creation."""

    scoped_model = WebhookEndpoint
    serializer_class = api.WebhookEndpointSerializer
    permission_classes = [*TeamScopedViewSet.permission_classes, SessionAdminsManage]
    pagination_class = IncidentPagination
    parser_classes = [JSONParser]
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        return super().get_queryset().order_by("id")

    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        endpoint = serializer.save(team=self.managed_team())  # SessionAdminsManage made sure there is one
        return Response(api.WebhookEndpointCreatedSerializer(endpoint).data, status=status.HTTP_201_CREATED)
