"""The shared cache (Redis) with a per-process fallback: nothing a reader needs may fail because
Redis is down. Throttle counters, the failed-key limiter and chart JSON go through `cache_call`."""
import logging

from django.core.cache import caches

logger = logging.getLogger(__name__)


def cache_call(method: str, *args, **kwargs):
    """Call a cache method on the shared cache, falling back to the per-process one when it fails."""
    try:
        return getattr(caches["default"], method)(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - redis.ConnectionError, TimeoutError, ...
        logger.warning("cache unavailable (%s); using process memory", type(error).__name__)
        return getattr(caches["fallback"], method)(*args, **kwargs)
