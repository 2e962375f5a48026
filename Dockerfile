# The web app, Celery worker and beat share this image (docker-compose.yml picks the command).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 DATA_DIR=/data
WORKDIR /app
# postgresql-client: pg_dump / pg_restore for manage.py backup and restore (docs/OPERATIONS.md);
# it must be of the server's major version or newer, which the command checks.
RUN apt-get update && apt-get install -y --no-install-recommends curl postgresql-client \
    && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md requirements.lock ./
RUN pip install --no-cache-dir -c requirements.lock .
COPY . .
# Bytecode for the project's modules: PYTHONDONTWRITEBYTECODE keeps a running container from
# writing it, so without this every process (each `manage.py` command, each worker) compiled
# them from source at start. pip above already compiled the installed packages.
RUN python -m compileall -q -x '/(tests|bench)/' /app
RUN mkdir -p /data && SECRET_KEY=build-only python manage.py collectstatic --no-input -v 0
EXPOSE 8000
CMD ["gunicorn", "config.wsgi", "--bind", "0.0.0.0:8000", "--access-logfile", "-"]
