"""Team isolation for the API, written once: every object an API view reaches belongs to the
caller's team(s), and other teams' objects answer 404.

The caller is an API key (it acts for its one team) or a signed-in session (the user's teams).
`TeamScopedViewSet` is the base of every viewset over a team's rows (incidents, webhook
endpoints, problems, grouping actions); plain API views use `TeamScopedMixin`.
"""
from rest_framework import exceptions, viewsets
from rest_framework.permissions import IsAuthenticated

from jobs.api.permissions import KeyScopeAllows
from jobs.models import ApiKey, Membership, Team


class TeamScopedMixin:
    """Every object reachable through the API belongs to the caller's team(s): others answer 404."""

    def by_key(self) -> bool:
        return isinstance(self.request.auth, ApiKey)

    def team_rows(self, model):
        """The caller's rows of a team-scoped model (its manager is a TeamScopedQuerySet)."""
        if self.by_key():
            return model.objects.of_team(self.request.auth.team_id)
        return model.objects.visible_to(self.request.user)

    def team_ids(self) -> list[int]:
        if self.by_key():
            return [self.request.auth.team_id]
        return Team.objects.ids_of_member(self.request.user)

    def submitting_team(self) -> Team:
        """The team new rows go to: the key's, or the session user's first team."""
        if self.by_key():
            return self.request.auth.team
        team = Team.objects.of_member(self.request.user).order_by("memberships__created_at").first()
        if team is None:
            raise exceptions.PermissionDenied("You are not a member of any team.")
        return team

    def managed_team(self) -> Team | None:
        """The team a change of team settings goes to: the key's, or a team the session user administers."""
        if self.by_key():
            return self.request.auth.team
        return Team.objects.of_member(self.request.user, role=Membership.Role.ADMIN).first()


class TeamScopedViewSet(TeamScopedMixin, viewsets.GenericViewSet):
    """Every object reachable through the API belongs to the caller's team(s): others answer 404."""

    # A viewset over `scoped_model`: its queryset is the caller's teams' rows, nothing else. Put it
    # first among a viewset's bases: the schema describes a viewset without a docstring of its own
    # by the first docstring in its MRO before DRF's classes, this one.

    scoped_model = None
    permission_classes = [IsAuthenticated, KeyScopeAllows]
    lookup_value_regex = "[0-9]+"

    def get_queryset(self):
        return self.team_rows(self.scoped_model)
