"""Who may change the team's knowledge base.

viewer: reads.  member: resolves, reopens, renames problems.  admin: also merges, splits and undoes
them, edits runbooks and imports a knowledge base.  An API key acts for its team: a write key as a
member, a read key as a viewer.
"""
from __future__ import annotations

from jobs.models import ApiKey, Membership

RESOLVE = "resolve"
MERGE = "merge"
RUNBOOK = "runbook"
IMPORT = "import"

NEEDS = {
    RESOLVE: {Membership.Role.ADMIN, Membership.Role.MEMBER},
    MERGE: {Membership.Role.ADMIN},
    RUNBOOK: {Membership.Role.ADMIN},
    IMPORT: {Membership.Role.ADMIN},
}


def role_of(user, team_id, auth=None) -> str | None:
    if isinstance(auth, ApiKey):
        if auth.team_id != team_id:
            return None
        return Membership.Role.MEMBER if auth.scope == ApiKey.Scope.WRITE else Membership.Role.VIEWER
    if not getattr(user, "is_authenticated", False):
        return None
    return Membership.objects.filter(user=user, team_id=team_id).values_list("role", flat=True).first()


def may(user, team_id, action: str, auth=None) -> bool:
    return role_of(user, team_id, auth) in NEEDS[action]


def abilities(user, team_id, auth=None) -> dict:
    """{action: bool} for templates."""
    role = role_of(user, team_id, auth)
    return {action: role in roles for action, roles in NEEDS.items()} | {"role": role}
