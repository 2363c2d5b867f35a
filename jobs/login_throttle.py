"""Login throttling with django-axes, for requests only.

django-axes refuses an authenticate() call without a request; code that checks a password
outside a request (management commands, shell sessions) has no client to throttle, so this
backend lets those through to the next backend instead of raising.
"""
from axes.backends import AxesStandaloneBackend


class RequestOnlyAxesBackend(AxesStandaloneBackend):
    def authenticate(self, request=None, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
