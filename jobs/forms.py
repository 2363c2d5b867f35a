"""The upload page's form and the incident list's filters. File checks (sizes, archives, empty
files) live in jobs.uploads."""
from django import forms

from jobs.models import Team

FILTER_CHARS = 200


class CutCharField(forms.CharField):
    """A filter's text, cut to FILTER_CHARS characters rather than refused."""

    def to_python(self, value):
        return super().to_python(value)[:FILTER_CHARS]


class IncidentFilterForm(forms.Form):
    """The incident list's query string: ?q=&category=&status=&cluster=&launcher=&since=&until=."""

    q = CutCharField(required=False)
    category = CutCharField(required=False)
    status = CutCharField(required=False)
    cluster = CutCharField(required=False)
    launcher = CutCharField(required=False)
    since = forms.DateField(required=False)
    until = forms.DateField(required=False)


class MultipleFileInput(forms.FileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files under one name; emptiness and sizes are judged by jobs.uploads."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput(attrs={"multiple": True}))
        kwargs.setdefault("required", False)
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        if not data:
            return []
        return [item for item in (data if isinstance(data, list | tuple) else [data]) if item]


class UploadForm(forms.Form):
    team = forms.ModelChoiceField(queryset=Team.objects.none(), label="Team", empty_label=None)
    logs = MultipleFileField(
        label="Log files",
        help_text="One or more per-rank logs, .gz files, or a .zip / .tar.gz of a torchrun --log-dir tree.",
    )
    pasted_log = forms.CharField(
        label="Or paste a log", required=False, strip=False,
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false", "class": "mono"}),
    )
    command = forms.CharField(
        label="Launch command", required=False,
        help_text="The torchrun / deepspeed / accelerate / srun command that started the job.",
        widget=forms.Textarea(attrs={"rows": 2, "spellcheck": "false", "class": "mono"}),
    )
    config = forms.FileField(label="Config file", required=False, allow_empty_file=True,
                             widget=forms.FileInput,
                             help_text="DeepSpeed JSON, accelerate/FSDP YAML or training arguments.")
    data = forms.FileField(label="Data sample", required=False, allow_empty_file=True,
                           widget=forms.FileInput, help_text="A few rows of the training data (JSON or JSONL).")
    title = forms.CharField(label="Title", required=False, max_length=200)
    job_id = forms.CharField(label="Job id", required=False, max_length=200)
    cluster = forms.CharField(label="Cluster", required=False, max_length=100)

    def __init__(self, *args, teams=None, **kwargs):
        super().__init__(*args, **kwargs)
        teams = list(teams or [])
        if len(teams) > 1:
            self.fields["team"].queryset = Team.objects.filter(pk__in=[team.pk for team in teams])
        else:
            del self.fields["team"]
        self.default_team = teams[0] if teams else None

    def chosen_team(self):
        return self.cleaned_data.get("team") or self.default_team

    def meta(self) -> dict:
        return {key: self.cleaned_data.get(key, "") for key in ("title", "job_id", "cluster")}
