from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from jobs.models import Artifact, Incident, WebhookDelivery, WebhookEndpoint
from jobs.webhooks import UnsafeURL, check_url
from repro import presenters as repro_presenters

META_FIELDS = ["title", "job_id", "attempt", "scheduler", "cluster", "callback_url"]


class IncidentSubmitSerializer(serializers.Serializer):
    """The multipart form of POST /api/v1/incidents/ (files are checked by jobs.uploads)."""

    files = serializers.ListField(
        child=serializers.FileField(allow_empty_file=True), allow_empty=True, required=False,
        help_text="One or more logs: plain text, .gz, or .zip/.tar.gz archives of per-rank logs.",
    )
    pasted_log = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False,
                                       help_text="Log text, as an alternative to files.")
    command = serializers.CharField(required=False, allow_blank=True, max_length=100_000,
                                    help_text="The launch command of the failed job.")
    config = serializers.FileField(required=False, allow_empty_file=True,
                                   help_text="DeepSpeed JSON, accelerate/FSDP YAML or training-args file.")
    data = serializers.FileField(required=False, allow_empty_file=True,
                                 help_text="A sample of the training data (JSON or JSONL).")
    title = serializers.CharField(required=False, allow_blank=True, max_length=200)
    job_id = serializers.CharField(required=False, allow_blank=True, max_length=200)
    attempt = serializers.CharField(required=False, allow_blank=True, max_length=50,
                                    help_text="With job_id and no Idempotency-Key, derives the key.")
    scheduler = serializers.CharField(required=False, allow_blank=True, max_length=50)
    cluster = serializers.CharField(required=False, allow_blank=True, max_length=100)
    callback_url = serializers.URLField(
        required=False, allow_blank=True, max_length=500,
        help_text="Receives the signed verdict; must resolve to public addresses only.",
    )

    def validate_callback_url(self, value: str) -> str:
        if value:
            try:
                check_url(value)
            except UnsafeURL as refusal:
                raise serializers.ValidationError(str(refusal), code="unsafe_url") from None
        return value

    def validate(self, attrs):
        if not attrs.get("files") and not attrs.get("pasted_log", "").strip():
            raise serializers.ValidationError({"files": ["Attach at least one log file."]}, code="required")
        return attrs


class IncidentAcceptedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Incident.Status.choices)
    url = serializers.URLField()


class IncidentSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:incident-detail")

    class Meta:
        model = Incident
        fields = [
            "id", "url", "status", "status_reason", "title", "job_id", "attempt", "scheduler", "cluster",
            "launcher", "world_size", "category", "exception", "failing_rank", "summary",
            "created_at", "updated_at", "diagnosed_at",
        ]
        read_only_fields = fields


class ProblemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    status = serializers.CharField()
    occurrences = serializers.IntegerField()
    resolution = serializers.CharField(allow_blank=True)


class ReproRunSerializer(serializers.Serializer):
    """One sandboxed repro run (repro.models.ReproRun), shaped by repro.presenters.run_dict."""

    id = serializers.IntegerField()
    kind = serializers.CharField(help_text="data_check, launch, memory or unsupported")
    status = serializers.CharField(help_text="queued, running, passed, failed, reproduced, not_reproduced, "
                                             "error or timed_out")
    reproduced = serializers.BooleanField(allow_null=True)
    fix_kind = serializers.CharField(allow_blank=True, allow_null=True)
    fix_index = serializers.IntegerField(allow_null=True, help_text="Position of the fix in diagnosis.fixes.")
    verified = serializers.BooleanField(allow_null=True)
    reproducible = serializers.BooleanField(help_text="False: not reproducible here (see reason).")
    reason = serializers.CharField(allow_blank=True)
    command = serializers.CharField(allow_blank=True)
    exit_status = serializers.IntegerField(allow_null=True)
    limit_hit = serializers.CharField(allow_null=True)
    elapsed_s = serializers.FloatField(allow_null=True)
    duration_s = serializers.FloatField(allow_null=True)
    peak_memory_mb = serializers.FloatField(allow_null=True)
    verdict = serializers.DictField(help_text="The engine's reading of the run's own log.")
    details = serializers.DictField()
    log_url = serializers.CharField(allow_null=True)
    output_url = serializers.CharField(allow_null=True, help_text="A file the run made, e.g. the converted data.")


class DeliverySerializer(serializers.ModelSerializer):
    class Meta:
        model = WebhookDelivery
        fields = ["id", "url", "event", "status", "attempts", "status_code", "error",
                  "created_at", "last_attempt_at", "delivered_at"]
        read_only_fields = fields


class IncidentDetailSerializer(IncidentSerializer):
    diagnosis = serializers.SerializerMethodField()
    problem = serializers.SerializerMethodField()
    repro_runs = serializers.SerializerMethodField()
    deliveries = DeliverySerializer(source="webhook_deliveries", many=True, read_only=True)
    links = serializers.SerializerMethodField()
    callback_url = serializers.CharField(read_only=True, help_text="Empty when none was given.")

    class Meta(IncidentSerializer.Meta):
        fields = IncidentSerializer.Meta.fields + [
            "command", "callback_url", "diagnosis", "problem", "repro_runs", "deliveries", "links",
        ]
        read_only_fields = fields

    @extend_schema_field({"type": "object", "nullable": True, "additionalProperties": True,
                          "description": "The CONTRACT.md diagnosis JSON, null until diagnosed."})
    def get_diagnosis(self, incident):
        diagnosis = getattr(incident, "diagnosis", None)
        return repro_presenters.with_verified(incident, diagnosis.data) if diagnosis is not None else None

    @extend_schema_field(ProblemSerializer(allow_null=True))
    def get_problem(self, incident):
        problem = incident.problems.first()  # knowledge.Problem: at most one per incident
        if problem is None:
            return None
        return {
            "id": problem.pk, "title": getattr(problem, "title", ""), "status": getattr(problem, "status", ""),
            "occurrences": getattr(problem, "occurrences", 0), "resolution": getattr(problem, "resolution", ""),
        }

    @extend_schema_field(ReproRunSerializer(many=True))
    def get_repro_runs(self, incident):
        return repro_presenters.runs_for(incident, self.context["request"].build_absolute_uri, api=True)

    @extend_schema_field({"type": "object", "additionalProperties": {"type": "string", "format": "uri"}})
    def get_links(self, incident):
        request = self.context["request"]
        names = {"timeline": "incident-timeline", "memory": "incident-memory", "artifacts": "incident-artifacts"}
        return {key: request.build_absolute_uri(reverse(f"api:{name}", args=[incident.pk]))
                for key, name in names.items()}


class ArtifactSerializer(serializers.ModelSerializer):
    name = serializers.CharField(source="original_name")
    kind = serializers.CharField(help_text="log, config, command, data_sample, metrics; repro_log and repro_output "
                                           "are the logs and files of repro runs")
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = Artifact
        fields = ["id", "kind", "name", "size", "sha256", "created_at", "download_url"]
        read_only_fields = fields

    @extend_schema_field(OpenApiTypes.URI)
    def get_download_url(self, artifact):
        path = reverse("api:incident-artifact-download", args=[artifact.incident_id, artifact.pk])
        return self.context["request"].build_absolute_uri(path)


class RankSerializer(serializers.Serializer):
    rank = serializers.IntegerField(allow_null=True)
    status = serializers.CharField(allow_null=True)
    exit_code = serializers.IntegerField(allow_null=True)
    events = serializers.ListField(child=serializers.DictField())


class TimelineSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    world_size = serializers.IntegerField(allow_null=True)
    failing_rank = serializers.IntegerField(allow_null=True)
    ranks = RankSerializer(many=True)


class MemorySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    series = serializers.ListField(child=serializers.DictField())
    estimate = serializers.DictField(allow_null=True)


class WebhookEndpointSerializer(serializers.ModelSerializer):
    class Meta:
        model = WebhookEndpoint
        fields = ["id", "url", "active", "created_at"]
        read_only_fields = ["id", "created_at"]

    def validate_url(self, value: str) -> str:
        try:
            check_url(value)
        except UnsafeURL as refusal:
            raise serializers.ValidationError(str(refusal), code="unsafe_url") from None
        return value


class WebhookEndpointCreatedSerializer(WebhookEndpointSerializer):
    """The creation answer: the only time the signing secret is shown."""

    class Meta(WebhookEndpointSerializer.Meta):
        fields = WebhookEndpointSerializer.Meta.fields + ["secret"]
        read_only_fields = WebhookEndpointSerializer.Meta.read_only_fields + ["secret"]
