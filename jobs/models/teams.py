from django.conf import settings
from django.db import models
from django.utils.text import slugify


class TeamScopedQuerySet(models.QuerySet):
    """Base for rows that belong to a team: team isolation is asked here, once."""

    def visible_to(self, user):
        """The rows of the teams the user belongs to (none for anonymous users)."""
        if not getattr(user, "is_authenticated", False):
            return self.none()
        return self.filter(team__memberships__user=user)

    def of_team(self, team):
        return self.filter(team=team)


class TeamQuerySet(models.QuerySet):
    def of_member(self, user, role: str | None = None):
        """The teams the user belongs to (with `role` there, when given), oldest membership first."""
        if not getattr(user, "is_authenticated", False):
            return self.none()
        # One filter() call: the user's own membership must hold the role, not any member's.
        return self.filter(memberships__user=user, **({"memberships__role": role} if role else {}))

    def ids_of_member(self, user) -> list[int]:
        return list(self.of_member(user).values_list("pk", flat=True))


class Team(models.Model):
    """Incidents, API keys and the knowledge base belong to a team."""

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="teams")

    objects = TeamQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        if not self.slug:
            self.slug = slugify(self.name)[:100] or "team"
        super().save(*args, **kwargs)


class Membership(models.Model):
    class Role(models.TextChoices):
        ADMIN = "admin", "Admin"
        MEMBER = "member", "Member"
        VIEWER = "viewer", "Viewer"  # reads the team's incidents and knowledge base, changes nothing there

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="unique_team_member")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"
