from rest_framework.permissions import SAFE_METHODS, BasePermission

from jobs.models import ApiKey


class KeyScopeAllows(BasePermission):
    """Read-only keys may only read; write keys and signed-in team members may also submit."""

    message = "This API key is read-only; a key with write scope is needed."
    code = "read_only_key"

    def has_permission(self, request, view) -> bool:
        if request.method in SAFE_METHODS or not isinstance(request.auth, ApiKey):
            return True
        return request.auth.scope == ApiKey.Scope.WRITE


class SessionAdminsManage(BasePermission):
    """Browser sessions change team settings only as a team admin (write keys act for their team)."""

    message = "Only team admins can change webhook endpoints."

    def has_permission(self, request, view) -> bool:
        if request.method in SAFE_METHODS or isinstance(request.auth, ApiKey):
            return True
        from jobs.models import Membership

        return Membership.objects.filter(user=request.user, role=Membership.Role.ADMIN).exists()

    def has_object_permission(self, request, view, obj) -> bool:
        if request.method in SAFE_METHODS or isinstance(request.auth, ApiKey):
            return True
        from jobs.models import Membership

        return Membership.objects.filter(user=request.user, team_id=obj.team_id, role=Membership.Role.ADMIN).exists()
