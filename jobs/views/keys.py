"""API keys page: team admins create keys (the raw key is shown once, on the answer page) and revoke them."""
from datetime import timedelta

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from jobs.models import ApiKey, Membership, Team
from jobs.webhooks import team_callback_secret


class ApiKeyForm(forms.Form):
    team = forms.ModelChoiceField(queryset=Team.objects.none(), empty_label=None)
    name = forms.CharField(max_length=100, required=False, help_text="What uses it, e.g. slurm-epilog")
    scope = forms.ChoiceField(choices=ApiKey.Scope.choices, initial=ApiKey.Scope.WRITE)
    expires_days = forms.IntegerField(min_value=1, max_value=3650, required=False,
                                      help_text="Leave empty for a key that does not expire")

    def __init__(self, *args, admin_teams, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = admin_teams


def _admin_teams(user):
    return Team.objects.of_member(user, role=Membership.Role.ADMIN)


@login_required
def api_keys(request):
    admin_teams = _admin_teams(request.user)
    new_key = None
    if request.method == "POST":
        form = ApiKeyForm(request.POST, admin_teams=admin_teams)
        if form.is_valid():
            days = form.cleaned_data["expires_days"]
            row, new_key = ApiKey.issue(
                form.cleaned_data["team"], name=form.cleaned_data["name"], scope=form.cleaned_data["scope"],
                expires_at=timezone.now() + timedelta(days=days) if days else None, created_by=request.user,
            )
            form = ApiKeyForm(admin_teams=admin_teams)
    else:
        form = ApiKeyForm(admin_teams=admin_teams)
    teams = Team.objects.of_member(request.user).order_by("name")
    admin_ids = set(admin_teams.values_list("pk", flat=True))
    sections = [
        {
            "team": team,
            "is_admin": team.pk in admin_ids,
            "keys": team.api_keys.select_related("created_by").order_by("-created_at"),
            "callback_secret": team_callback_secret(team) if team.pk in admin_ids else None,
        }
        for team in teams
    ]
    response = render(request, "jobs/api_keys.html", {
        "form": form, "sections": sections, "new_key": new_key, "can_create": bool(admin_ids), "now": timezone.now(),
    })
    if new_key:
        response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def revoke_api_key(request, key_pk):
    key = get_object_or_404(ApiKey, pk=key_pk, team__in=_admin_teams(request.user))
    if key.revoked_at is None:
        ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
        messages.success(request, f"Key {key.prefix}… revoked.")
    return redirect("jobs:api_keys")
