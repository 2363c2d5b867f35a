"""The engine's input limits, from settings: shared by the upload service and the diagnosis task
(so that neither imports the other)."""

from django.conf import settings

import triage


def upload_limits() -> triage.Limits:
    return triage.Limits(
        max_total_bytes=settings.TRIAGE_UPLOAD_MAX_BYTES,
        max_members=settings.TRIAGE_ARCHIVE_MAX_MEMBERS,
        max_ratio=settings.TRIAGE_ARCHIVE_MAX_RATIO,
    )
