from rest_framework.pagination import PageNumberPagination


class IncidentPagination(PageNumberPagination):
    """Page numbers over a fixed order (newest first, id as the tie-breaker)."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200
