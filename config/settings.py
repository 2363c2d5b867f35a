"""The one settings module. Every knob is a TRIAGE_* environment variable.

Defaults run on a laptop with no services: SQLite, Celery's filesystem broker
under var/, local media. TRIAGE_DATABASE_URL and TRIAGE_REDIS_URL switch to
PostgreSQL and Redis. TRIAGE_ENV=production refuses the development secret key
and DEBUG.
"""
from pathlib import Path

import plotly
from django.core.exceptions import ImproperlyConfigured

from config.env import database_from_url, env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("TRIAGE_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEV_SECRET_KEY = "triage-development-secret-key-do-not-use-in-production"
SECRET_KEY = env_str("TRIAGE_SECRET_KEY", DEV_SECRET_KEY)
PRODUCTION = env_str("TRIAGE_ENV", "development") == "production"
DEBUG = env_bool("TRIAGE_DEBUG", not PRODUCTION)
if PRODUCTION and (DEBUG or SECRET_KEY == DEV_SECRET_KEY or len(SECRET_KEY) < 32):
    raise ImproperlyConfigured(
        "TRIAGE_ENV=production needs TRIAGE_DEBUG off and a TRIAGE_SECRET_KEY of at least 32 characters"
    )

ALLOWED_HOSTS = env_list("TRIAGE_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("TRIAGE_CSRF_TRUSTED_ORIGINS", [])
SESSION_COOKIE_SECURE = PRODUCTION
CSRF_COOKIE_SECURE = PRODUCTION
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "jobs",
    "knowledge",
    "repro",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

_database_url = env_str("TRIAGE_DATABASE_URL")
DATABASES = {
    "default": database_from_url(_database_url)
    if _database_url
    else {"ENGINE": "django.db.backends.sqlite3", "NAME": VAR_DIR / "triage.sqlite3",
          "OPTIONS": {"timeout": 20}}
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "jobs:incident_list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
# Plotly's JS is served from the installed plotly package (no CDN, no copy to keep in sync).
STATICFILES_DIRS = [BASE_DIR / "static", ("vendor", Path(plotly.__file__).resolve().parent / "package_data")]
STATIC_ROOT = Path(env_str("TRIAGE_STATIC_ROOT", str(VAR_DIR / "staticfiles")))
MEDIA_URL = "/media/"
MEDIA_ROOT = Path(env_str("TRIAGE_MEDIA_ROOT", str(VAR_DIR / "media")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# Uploads: every file is streamed to disk; nothing big is held in memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 0
# Uploads go to temporary files, text masked and hashed in the same pass (jobs/uploadhandlers.py).
FILE_UPLOAD_HANDLERS = ["jobs.uploadhandlers.MaskingUploadHandler"]
FILE_UPLOAD_TEMP_DIR = str(VAR_DIR / "upload-tmp")  # swept of what a killed process left (jobs.staging)
Path(FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
DATA_UPLOAD_MAX_NUMBER_FILES = env_int("TRIAGE_UPLOAD_MAX_FILES", 512, minimum=1)
TRIAGE_UPLOAD_MAX_BYTES = env_int("TRIAGE_UPLOAD_MAX_BYTES", 2 * 1024**3, minimum=1)
TRIAGE_UPLOAD_MAX_FILES = DATA_UPLOAD_MAX_NUMBER_FILES
TRIAGE_ARCHIVE_MAX_MEMBERS = env_int("TRIAGE_ARCHIVE_MAX_MEMBERS", 10_000, minimum=1)
TRIAGE_ARCHIVE_MAX_RATIO = env_int("TRIAGE_ARCHIVE_MAX_RATIO", 200, minimum=1)

# Celery: filesystem broker by default (no service to start), Redis when configured.
REDIS_URL = env_str("TRIAGE_REDIS_URL")
BROKER_DIR = VAR_DIR / "broker"
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    # A dead worker's unacked messages return after the visibility timeout (minutes, not an hour);
    # a message redelivered while its diagnosis still runs is harmless: the claim skips it.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("TRIAGE_VISIBILITY_TIMEOUT_S", 300, minimum=10),
        "socket_connect_timeout": 2, "socket_timeout": 10,
    }
else:
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "out"),
        "data_folder_out": str(BROKER_DIR / "out"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }
    for _sub in ("out", "processed", "control"):
        (BROKER_DIR / _sub).mkdir(parents=True, exist_ok=True)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("TRIAGE_CELERY_EAGER", False)
CELERY_TASK_ROUTES = {
    "jobs.tasks.diagnose_incident": {"queue": "diagnose"},
    "jobs.tasks.deliver_webhook": {"queue": "diagnose"},
    "repro.tasks.run_repro": {"queue": "repro"},
}
CELERY_TASK_DEFAULT_QUEUE = "diagnose"
TRIAGE_DIAGNOSE_TIME_LIMIT = env_int("TRIAGE_DIAGNOSE_TIME_LIMIT", 900, minimum=1)

# Webhooks: callbacks to private/loopback addresses are refused unless allowed (SSRF).
TRIAGE_WEBHOOK_ALLOW_PRIVATE = env_bool("TRIAGE_WEBHOOK_ALLOW_PRIVATE", False)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "jobs.api.auth.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "jobs.api.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": [
        "jobs.api.throttles.ApiKeyRateThrottle",
        "jobs.api.throttles.SubmitRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "api_key": env_str("TRIAGE_API_RATE", "600/min"),
        "submit": env_str("TRIAGE_SUBMIT_RATE", "120/min"),
        "anon": "60/min",
    },
    # Reverse proxies in front of the app (1 behind nginx): the client address is that many entries
    # from the right of X-Forwarded-For; 0 ignores the header (a client could forge it).
    "NUM_PROXIES": env_int("TRIAGE_NUM_PROXIES", 0, minimum=0),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Triage API",
    "DESCRIPTION": "Submit failed fine-tuning jobs' logs and read their diagnosis.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI and Redoc assets come from drf-spectacular-sidecar (no CDN); needs
    # "drf_spectacular_sidecar" in INSTALLED_APPS for the static files.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "IncidentStatusEnum": "jobs.models.incidents.Incident.Status",
        "DeliveryStatusEnum": "jobs.models.webhooks.WebhookDelivery.Status",
    },
}

# "fallback" is per process: throttles and the failed-key limiter count there while Redis is down.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
          "fallback": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "fallback"}}
if REDIS_URL:
    CACHES["default"] = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                         "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 1}}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("TRIAGE_LOG_LEVEL", "INFO")},
}

# Repro runs (repro/): sandboxed reproductions on CPU. The runtime venv is built by `make sandbox-runtime`.
TRIAGE_REPRO_ENABLED = env_bool("TRIAGE_REPRO_ENABLED", True)
TRIAGE_SANDBOX_RUNTIME = env_str("TRIAGE_SANDBOX_RUNTIME", "/opt/triage-sandbox")
TRIAGE_SANDBOX_UID_BASE = env_int("TRIAGE_SANDBOX_UID_BASE", 64100, minimum=1000)
TRIAGE_SANDBOX_SLOTS = env_int("TRIAGE_SANDBOX_SLOTS", 8, minimum=1)
TRIAGE_REPRO_WALL_S = env_int("TRIAGE_REPRO_WALL_S", 180, minimum=5)
TRIAGE_REPRO_TIME_LIMIT = env_int("TRIAGE_REPRO_TIME_LIMIT", 1200, minimum=30)
TRIAGE_REPRO_CACHE = env_str("TRIAGE_REPRO_CACHE", "")
# --- Robustness (issue 15): exactly-once diagnosis, sweeps, broker outages, login throttling ---
TRIAGE_HEARTBEAT_S = env_int("TRIAGE_HEARTBEAT_S", 20, minimum=1)  # a diagnosing row is touched this often
TRIAGE_QUEUED_DEADLINE_S = env_int("TRIAGE_QUEUED_DEADLINE_S", 60, minimum=1)  # queued longer: enqueue again
TRIAGE_SWEEP_EVERY_S = env_int("TRIAGE_SWEEP_EVERY_S", 20, minimum=1)
CELERY_BEAT_SCHEDULE = {
    "sweep-incidents": {"task": "jobs.tasks.sweep_incidents", "schedule": float(TRIAGE_SWEEP_EVERY_S),
                        "options": {"expires": float(TRIAGE_SWEEP_EVERY_S)}},
    "sweep-orphan-files": {"task": "jobs.tasks.sweep_orphan_files", "schedule": 600.0, "options": {"expires": 600.0}},
}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_TASK_REJECT_ON_WORKER_LOST = False  # jobs.tasks.record_lost_worker marks the attempt instead
CELERY_TASK_ACKS_ON_FAILURE_OR_TIMEOUT = True
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A submit must answer while the broker is down: give up publishing after about a second.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.5, "interval_max": 0.5}

INSTALLED_APPS += ["axes"]
MIDDLEWARE += ["axes.middleware.AxesMiddleware"]  # last, as django-axes asks
AUTHENTICATION_BACKENDS = ["jobs.login_throttle.RequestOnlyAxesBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env_int("TRIAGE_LOGIN_FAILURES", 5, minimum=1)
AXES_COOLOFF_TIME = env_int("TRIAGE_LOGIN_COOLOFF_MINUTES", 15, minimum=1) / 60  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "jobs.api.throttles.client_ip"  # the same proxy count as the API limiters
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_HTTP_RESPONSE_CODE = 429
