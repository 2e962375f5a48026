"""Project settings, read from the environment.

With no DATABASE_URL the app runs on a SQLite file under DATA_DIR and, with no REDIS_URL,
Celery tasks run in-process: the embedded default for a first look on a laptop. Postgres and
Redis are the production setup and the one every test uses.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_list, env_str
from config.signin import social_providers

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("DATA_DIR") or BASE_DIR / "data")
DEBUG = env_bool("DEBUG", False)


def _secret_key() -> str:
    key = env_str("SECRET_KEY")
    if key:
        return key
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set it in the environment (DEBUG is off, so no "
            "development key is generated)."
        )
    # Development only: a random key kept in DATA_DIR so sessions survive a restart.
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    key_file = DATA_DIR / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "knox",  # API tokens, stored as hashes (annotator.tokens); before annotator, whose admin
    # unregisters knox's
    "django_filters",
    "drf_spectacular",
    "django_htmx",
    "csp",
    "axes",
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    "allauth.socialaccount.providers.github",
    "config",
    "taxonomy",
    "annotator",
    "ingest",
    "labeling",
    "front",
    "agreement",
    "raters",
    "dataset",
    "interviews",
]

MIDDLEWARE = [
    # First: the request's id (X-Request-ID) and its latency by view (config.observability).
    "config.observability.RequestMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",  # after sessions, before common (Django's order)
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "allauth.account.middleware.AccountMiddleware",  # sign-in through identity providers
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.middleware.CSPMiddleware",  # django-csp's, minus redirects
    # Inside the CSP middleware: a nonce for the admin's and the browsable API's <style>s.
    "config.csp_scopes.ScopedCSPMiddleware",
    # NUL characters, oversized bodies and deep JSON refused with a 400 naming the field (after
    # the CSP, so that its refusals carry the security headers).
    "config.middleware.InputLimitsMiddleware",
    # The signed-in person's saved language over LocaleMiddleware's cookie / Accept-Language.
    # After the input limits: it reads the session, which a NUL in its cookie would break (so
    # those refusals speak the cookie's or the browser's language).
    "annotator.language.UserLanguageMiddleware",
    # Inside the language: the page for an empty 405 speaks the person's language.
    "config.middleware.MethodNotAllowedPage",
    "django_htmx.middleware.HtmxMiddleware",
    # A view that lost the database answers 503 with Retry-After, not 500 (the site's
    # handler500 does the same for an error raised in a middleware).
    "config.unavailable.DatabaseUnavailableMiddleware",
    # Last, as django-axes asks: it inspects the response of a failed login.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",  # LANGUAGE_CODE, LANGUAGES
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "csp.context_processors.nonce",
                "annotator.context_processors.navigation",
            ],
        },
    },
]

DATABASE_URL = env_str("DATABASE_URL")
# The labeling hot path's statements are prepared once per connection (annotator/sql.py);
# turn off behind a connection pooler that cannot keep prepared statements.
DB_PREPARED_STATEMENTS = env_bool("DB_PREPARED_STATEMENTS", True)
# The queue's reservation and a first label as one PL/pgSQL call each (annotator/pg_functions.py);
# off: the same statements one by one from Python, as on SQLite.
DB_FUNCTIONS = env_bool("DB_FUNCTIONS", True)
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        options = DATABASES["default"].setdefault("OPTIONS", {})
        # Generic plans for prepared statements, which only the labeling hot path uses
        # (lib/sql.py): planned once per connection instead of on every request.
        # No JIT compilation: PostgreSQL compiles a statement whose estimated cost passes
        # jit_above_cost, and a generic plan's estimate grows with the tables, not with the
        # few rows its LIMIT reads. At ten times the study the queue's next-issue function
        # crossed it and spent ~20 ms compiling on every call (bench/RESULTS.md, "Ten times
        # the study on a quiet host").
        options["options"] = "-c plan_cache_mode=force_generic_plan -c jit=off"
        # Django turns psycopg's statement preparation off (None), which also ignores an
        # explicit prepare=True. Its own queries are bound on the client and never prepared
        # whatever this says; annotator/sql.py asks for each of its statements.
        if DB_PREPARED_STATEMENTS:
            options["prepare_threshold"] = 5
    # A persistent connection that died while idle (PostgreSQL restarted) is replaced before
    # its first query of a request: one `SELECT 1` per request that reuses a connection.
    # Off, the first request of each process after a restart answers 503 instead.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = env_bool("DB_HEALTH_CHECKS", True)
else:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(DATA_DIR / "db.sqlite3")}
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Seconds a client is told to wait (Retry-After) while the database is away
# (config.unavailable).
UNAVAILABLE_RETRY_AFTER = env_int("UNAVAILABLE_RETRY_AFTER", 5)

REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "config.cache.RedisCache",
            "LOCATION": REDIS_URL,
            # Each test run gets its own prefix (bin/test): cached rows keyed by database ids
            # must not outlive the test database they were read from.
            "KEY_PREFIX": env_str("CACHE_KEY_PREFIX", "annotator"),
            # Redis away: a call gives up quickly and the site goes on without the cache
            # (config.cache).
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Celery: Redis is the broker when configured; without it tasks run in-process.
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TIMEZONE = "UTC"
# The Celery app, for the apps that hand tasks over (annotator.outbox.celery_app): imported on
# first use, not at start-up (config/__init__).
TASK_APP = "config.celery.app"
# Ingest: a sync run queued for workers is cut into this many parts (time slices) that free
# workers share; a part's task stores pages for this many seconds, then queues its next task
# behind the others (ingest/tasks.py).
INGEST_SYNC_PARTS = env_int("INGEST_SYNC_PARTS", 4)
INGEST_TASK_SECONDS = env_int("INGEST_TASK_SECONDS", 2)
# The forge rate limit as one budget in Redis shared by every worker and host (ingest.budget).
FORGE_SHARED_BUDGET = env_bool("FORGE_SHARED_BUDGET", True)
# A part's task delivered again (its worker killed) takes the part over when nothing was
# heard of it for this long (seconds; ingest.runs.redelivered_chain).
INGEST_TAKEOVER_SECONDS = env_int("INGEST_TAKEOVER_SECONDS", 60)
# The outbox's sweep, and how long a task handed to Redis may stay unstarted before it is
# taken to have been lost with the broker's queue and handed over again (annotator.outbox).
OUTBOX_SWEEP_SECONDS = env_int("OUTBOX_SWEEP_SECONDS", 10)
OUTBOX_REPUBLISH_SECONDS = env_int("OUTBOX_REPUBLISH_SECONDS", 15 * 60)
# A broker that does not answer is given up on quickly (the outbox keeps the task).
CELERY_BROKER_CONNECTION_TIMEOUT = 2
# A task is acknowledged when it ends (acks_late); the message of a worker killed mid-task
# stays unacknowledged in Redis and is handed to another worker once it is this old
# (seconds; docs/OPERATIONS.md "Faults"). A task that runs longer is handed over too, while
# it runs: every task claims its job, so the second delivery waits or leaves it alone.
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 15 * 60)
# How often a worker looks for such messages (seconds; kombu's default scans every 100 s).
CELERY_RESTORE_INTERVAL = env_int("CELERY_RESTORE_INTERVAL", 60)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "socket_connect_timeout": 2,
    "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
    "unacked_restore_interval": CELERY_RESTORE_INTERVAL,
    "unacked_restore_throttle": 1,
}
# A worker running a job (an export, a release, an upload, a rater run, a recall ranking)
# writes the job's heartbeat this often (seconds), from a thread of its own whatever the work
# is doing; a job `running` under a worker of another host not heard of for
# JOB_STALE_SECONDS is taken over by its task's next delivery (lib.jobclaim, docs/OPERATIONS.md
# "Faults"). A few heartbeats: a database that answers slowly must not make a live worker gone.
JOB_HEARTBEAT_SECONDS = env_int("JOB_HEARTBEAT_SECONDS", 15)
JOB_STALE_SECONDS = env_int("JOB_STALE_SECONDS", 120)
if JOB_HEARTBEAT_SECONDS < 1 or JOB_STALE_SECONDS < 2 * JOB_HEARTBEAT_SECONDS:
    raise ImproperlyConfigured(
        f"JOB_STALE_SECONDS={JOB_STALE_SECONDS} must be at least twice "
        f"JOB_HEARTBEAT_SECONDS={JOB_HEARTBEAT_SECONDS} (and that at least 1)"
    )
# How often (seconds) celery beat looks for jobs `running` under a worker that is gone (a host
# lost, a worker killed) and queues their task again (annotator.jobsweep), rather than wait
# for the broker's visibility timeout to bring the lost worker's message back: such a job
# starts again within JOB_STALE_SECONDS + JOB_SWEEP_SECONDS of its worker's last heartbeat.
JOB_SWEEP_SECONDS = env_int("JOB_SWEEP_SECONDS", 60)
if JOB_SWEEP_SECONDS < 1:
    raise ImproperlyConfigured(f"JOB_SWEEP_SECONDS={JOB_SWEEP_SECONDS} must be at least 1")
# Test-only: each step of an export, a release or a rater run sleeps this many ms, so a worker
# can be killed in the middle of one (tests/faults/test_worker_kill.py). 0 in production.
JOB_STEP_DELAY_MS = env_int("JOB_STEP_DELAY_MS", 0)
# One beat sends the periodic tasks even if two are started (config.beat, a lock in Redis).
if REDIS_URL:
    CELERY_BEAT_SCHEDULER = "config.beat:LockedScheduler"
CELERY_BEAT_SCHEDULE: dict = {
    # Ingest: resume runs whose worker died; start the periodic re-syncs that are due.
    "ingest-resync-due": {"task": "ingest.tasks.resync_due", "schedule": 15 * 60},
    # The outbox (annotator.outbox): tasks that could not reach Redis, handed over once it is
    # back; tasks lost with a Redis that restarted empty, handed over again.
    "outbox-sweep": {"task": "annotator.tasks.sweep_outbox", "schedule": OUTBOX_SWEEP_SECONDS},
    # Jobs left `running` by a worker that is gone, queued again (annotator.jobsweep).
    "job-sweep": {"task": "annotator.tasks.requeue_stale_jobs", "schedule": JOB_SWEEP_SECONDS},
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "annotator.auth.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Sign-in through identity providers (annotator.signin; README "Sign-in"): OpenID Connect and
# GitHub from the environment (config.signin), none by default. A provider sign-in that
# matches no linked account makes one only from an invite, under the username rule.
SOCIALACCOUNT_PROVIDERS = social_providers(os.environ)
SOCIALACCOUNT_ADAPTER = "annotator.signin.SocialAccountAdapter"
ACCOUNT_ADAPTER = "annotator.signin.AccountAdapter"
SOCIALACCOUNT_AUTO_SIGNUP = True
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False  # never link to an account by e-mail address
SOCIALACCOUNT_EMAIL_REQUIRED = False
SOCIALACCOUNT_EMAIL_VERIFICATION = "none"
SOCIALACCOUNT_STORE_TOKENS = False  # the provider's access token is used once, not kept
SOCIALACCOUNT_LOGIN_ON_GET = False  # a sign-in starts with a POST (CSRF), never a bare link
SOCIALACCOUNT_REQUESTS_TIMEOUT = 10
ACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_UNIQUE_EMAIL = False  # as for accounts made by a lead or an invite
ACCOUNT_SIGNUP_FIELDS = ["username*", "email"]
# Off: no password form on the login and invite pages; only staff sign in with a password
# (on the admin's login page). annotator.signin.passwords_allowed.
LOCAL_PASSWORDS = env_bool("LOCAL_PASSWORDS", True)

# Failed logins: five wrong passwords for one account from one address lock it for 15 minutes.
AXES_ENABLED = env_bool("AXES_ENABLED", True)
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = 0.25  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False

# English first; the interface also speaks Simplified Chinese (locale/zh_Hans, made by
# bin/messages). A member's saved choice wins, then the browser's Accept-Language.
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
FORMAT_MODULE_PATH = ["config.formats"]  # English dates ISO-like (config/formats/en)
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
MEDIA_ROOT = DATA_DIR / "media"
EXPORT_ROOT = DATA_DIR / "exports"
# Uploaded issue files wait here for their Celery task, which deletes them (dataset.uploads).
UPLOAD_ROOT = DATA_DIR / "uploads"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = True

# Forge tokens are secrets: read from the environment only, never stored in the database.
FORGE_TOKENS = {
    "github": env_str("GITHUB_TOKEN", ""),
    "gitee": env_str("GITEE_TOKEN", ""),
    "gitlab": env_str("GITLAB_TOKEN", ""),
}
# Origins besides the public forges' API hosts that may receive a token, each bound to its forge
# (GitHub Enterprise, a self-hosted GitLab): `github=host[:port]` (https; 443 without a port),
# `gitlab=http://host[:port]` for plain http. A repository pointing anywhere else, or at an origin
# listed for another forge, is fetched without a token. An entry naming no forge stops start-up
# (ingest.hosts.parse_token_host, called from IngestConfig.ready).
FORGE_TOKEN_HOSTS = env_list("FORGE_TOKEN_HOSTS")
# Hosts besides the public forges' API hosts that a repository's API URL may name (ingest.hosts):
# `host[:port]` over https, `http://host[:port]` for plain http; trusted even on a private address.
FORGE_API_HOSTS = env_list("FORGE_API_HOSTS")
# Model endpoints (OpenAI-compatible chat completions) an llm machine rater may name (raters.llm),
# under the same rule as FORGE_API_HOSTS but with no public default: only these hosts, loopback
# too when listed. The key comes from the variable each rater names (`api_key_env`).
MODEL_API_HOSTS = env_list("MODEL_API_HOSTS")
# The environment variables a rater may name as its key (`api_key_env`): only these, so a lead
# cannot send another server secret (SECRET_KEY, DATABASE_URL, a forge token) to a model host.
# Empty: no rater may read a key (a local server needs none). The rule:
# raters.runs.key_variable_refused.
MODEL_API_KEY_VARS = env_list("MODEL_API_KEY_VARS")
# Seconds one request may take (a CPU server answers slowly), tries after a 429, a 5xx or a
# dropped connection (with back-off, honouring retry-after), requests in flight per run.
MODEL_API_TIMEOUT = env_int("MODEL_API_TIMEOUT", 300)
MODEL_API_MAX_RETRIES = env_int("MODEL_API_MAX_RETRIES", 5)
MODEL_API_CONCURRENCY = env_int("MODEL_API_CONCURRENCY", 4)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "annotator.tokens.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # django-filter with filter forms that list only what the caller may see (issue #20, F1).
    "DEFAULT_FILTER_BACKENDS": ["dataset.filters.ScopedFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
# API tokens (annotator.tokens): knox keeps a digest, never the key; no expiry, as before.
REST_KNOX = {"TOKEN_TTL": None, "AUTH_HEADER_PREFIX": "Token", "AUTO_REFRESH": False}
SPECTACULAR_SETTINGS = {
    "TITLE": "Issue annotator API",
    "DESCRIPTION": "Issues, annotations, final labels, agreement and exports of labeling studies.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema lists every endpoint and parameter: for logged-in users (session or token) only.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
}

# Content-Security-Policy: no inline scripts or styles anywhere; issue text is hostile. Only the
# admin and DRF's browsable API get nonced <style>s (config.csp_scopes).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "frame-src": ["'none'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
        "base-uri": ["'none'"],
    }
}

# Sessions are read on every request: from the cache, falling back to (and written through
# to) the database, so a restart of Redis logs no one out.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the cookie-free meta tag instead
# The language switcher's cookie (annotator.views.set_language): no script reads it.
LANGUAGE_COOKIE_HTTPONLY = True
LANGUAGE_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    LANGUAGE_COOKIE_SECURE = SESSION_COOKIE_SECURE
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    # X-Forwarded-Proto as the reverse proxy set it. With TRUST_X_FORWARDED_PROTO=0 Django reads
    # the scheme gunicorn decided instead, which takes the header only from FORWARDED_ALLOW_IPS
    # (the proxy's address): docs/OPERATIONS.md, "Several hosts".
    if env_bool("TRUST_X_FORWARDED_PROTO", True):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]

# Logs: plain text, or with LOG_FORMAT=json one JSON object a line (config.jsonlog) carrying
# the request id (config.requestid), which also travels into the tasks a request queues.
# LOG_REQUESTS: one line per request (path, status, duration); on by default in JSON mode.
LOG_FORMAT = env_str("LOG_FORMAT", "text") or "text"
if LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r}: use text or json")
LOG_REQUESTS = env_bool("LOG_REQUESTS", LOG_FORMAT == "json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "config.requestid.RequestIdFilter"}},
    "formatters": {"json": {"()": "config.jsonlog.JsonFormatter"}} if LOG_FORMAT == "json" else {},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["request_id"],
            **({"formatter": "json"} if LOG_FORMAT == "json" else {}),
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        # urllib3 logs full request URLs at DEBUG, and Gitee's token travels in the query.
        "urllib3": {"level": "WARNING"},
    },
}

# Prometheus (/metrics, config.observability; docs/OPERATIONS.md "Metrics and logs"): clients
# from these networks (CIDRs), or any client presenting `Authorization: Bearer METRICS_TOKEN`.
# Behind a reverse proxy, list it in METRICS_TRUSTED_PROXIES: the client's address is then read
# from what it appended to X-Forwarded-For, never from what the client wrote there.
# Several processes (gunicorn's workers) add up their values through PROMETHEUS_MULTIPROC_DIR,
# an environment variable prometheus_client reads itself.
METRICS_ALLOWED_IPS = env_list("METRICS_ALLOWED_IPS", ["127.0.0.1/32", "::1/128"])
METRICS_TOKEN = env_str("METRICS_TOKEN", "") or ""
METRICS_TRUSTED_PROXIES = env_list("METRICS_TRUSTED_PROXIES")
# A Celery worker answers Prometheus on this port (0: not), at this address.
WORKER_METRICS_PORT = env_int("WORKER_METRICS_PORT", 0)
WORKER_METRICS_ADDR = env_str("WORKER_METRICS_ADDR", "127.0.0.1") or "127.0.0.1"

# Input limits (config.middleware.InputLimitsMiddleware, lib/inputlimits.py): a request body,
# an uploaded file or an imported file above MAX_UPLOAD_BYTES is refused unread; JSON nested
# deeper than MAX_JSON_DEPTH is refused before it is parsed. Form fields and JSON bodies without
# their files stay under Django's DATA_UPLOAD_MAX_MEMORY_SIZE.
MAX_UPLOAD_BYTES = env_int("MAX_UPLOAD_BYTES", 10 * 1024 * 1024)
MAX_JSON_DEPTH = env_int("MAX_JSON_DEPTH", 32)
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 2_621_440)

# Labeling defaults.
DEFAULT_ANNOTATIONS_PER_ISSUE = 3
RESERVATION_MINUTES = env_int("RESERVATION_MINUTES", 30)

# The issue list's search (labeling.issue_list.time_limit): the database cancels it after this
# many milliseconds, and the page says so, rather than hold a web worker (0: no limit).
SEARCH_TIMEOUT_MS = env_int("SEARCH_TIMEOUT_MS", 2000)
