from django import forms

from knowledge.models import Problem


class ProblemForm(forms.ModelForm):
    """Any team member may set the status and write down the resolution (plain text)."""

    class Meta:
        model = Problem
        fields = ["status", "resolution"]
        widgets = {"resolution": forms.Textarea(attrs={"rows": 5, "maxlength": 20_000})}

    def clean_resolution(self):
        resolution = self.cleaned_data["resolution"].strip()
        if len(resolution) > 20_000:
            raise forms.ValidationError("Keep the resolution under 20,000 characters.")
        return resolution
