"""Placeholder: the REST API owner replaces this."""
urlpatterns = []
