from django import forms

from knowledge.models import Problem

TEXT_LIMIT = 20_000


class ProblemForm(forms.ModelForm):
    """Members set the status, write the resolution (Markdown) and name the fix that worked."""

    field_order = ["status", "resolution", "fix_choice", "fix_summary"]
    fix_choice = forms.ChoiceField(required=False, label="Fix that worked",
                                   help_text="Pick one of the fixes the engine suggested, or write your own below.")

    class Meta:
        model = Problem
        fields = ["status", "resolution", "fix_summary"]
        widgets = {"resolution": forms.Textarea(attrs={"rows": 6, "maxlength": TEXT_LIMIT}),
                   "fix_summary": forms.Textarea(attrs={"rows": 2, "maxlength": 2000})}
        labels = {"resolution": "Resolution (Markdown)", "fix_summary": "Fix in your own words"}

    def __init__(self, *args, suggested=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.suggested = list(suggested)
        self.fields["fix_choice"].choices = [("", "—"), ("manual", "Written by hand (below)")] + [
            (str(index), f"{fix['kind']}: {fix['title']}"[:150]) for index, fix in enumerate(self.suggested)]

    def clean_resolution(self):
        resolution = self.cleaned_data["resolution"].strip()
        if len(resolution) > TEXT_LIMIT:
            raise forms.ValidationError("Keep the resolution under 20,000 characters.")
        return resolution

    def fix(self) -> tuple[str | None, str | None]:
        """(fix_kind, fix_summary) to store; (None, None) keeps what is there."""
        choice, written = self.cleaned_data.get("fix_choice"), self.cleaned_data.get("fix_summary", "").strip()
        if choice and choice.isdigit() and int(choice) < len(self.suggested):
            fix = self.suggested[int(choice)]
            return fix["kind"], written or fix["title"]
        if choice == "manual" or written:
            return "manual", written
        return None, None


class TitleForm(forms.Form):
    title = forms.CharField(max_length=200, required=False,
                            help_text="Leave empty to go back to the title made from the masked error.")


class MergeForm(forms.Form):
    problems = forms.CharField(max_length=500, label="Merge these problems into this one",
                               help_text="Problem numbers, separated by spaces or commas.")

    def clean_problems(self):
        raw = self.cleaned_data["problems"].replace(",", " ").replace("#", " ").split()
        if not raw or not all(part.isdigit() for part in raw):
            raise forms.ValidationError("Give problem numbers, e.g. 12 15.")
        return sorted({int(part) for part in raw})


class RunbookForm(forms.Form):
    body = forms.CharField(widget=forms.Textarea(attrs={"rows": 16, "maxlength": TEXT_LIMIT}), max_length=TEXT_LIMIT,
                           label="Runbook (Markdown)")


class ImportForm(forms.Form):
    file = forms.FileField(help_text="A JSON file exported from a Triage knowledge base.")


class SearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, label="Search")
    category = forms.CharField(required=False, max_length=40)
    status = forms.ChoiceField(required=False, choices=[("", "any status")] + list(Problem.Status.choices))
    cluster = forms.CharField(required=False, max_length=100)
    since = forms.DateField(required=False)
    until = forms.DateField(required=False)
