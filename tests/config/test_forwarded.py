"""Forwarded headers count only from the reverse proxy's address. A web host set up as in
docker-compose.yml (gunicorn with FORWARDED_ALLOW_IPS the proxy's address, the app with
TRUST_X_FORWARDED_PROTO=0) takes `X-Forwarded-Proto: https` from the proxy (here 127.0.0.1)
and ignores it from anyone else (here 127.0.0.2, another address of the loopback), who is sent
to HTTPS as any plain-HTTP client is.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from tests.faults.services import database_url, free_port, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def web_host(db) -> Iterator[int]:
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "SECRET_KEY": settings.SECRET_KEY,
        "DEBUG": "0",
        "ALLOWED_HOSTS": "annotator.example.org,127.0.0.1",
        "SECURE_SSL_REDIRECT": "1",  # bin/test turns it off for the other tests
        "TRUST_X_FORWARDED_PROTO": "0",
        "FORWARDED_ALLOW_IPS": "127.0.0.1",
        "LOG_LEVEL": "ERROR",
    }
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi", "-b", f"127.0.0.1:{port}",
             "-w", "1", "--log-level", "warning"],
            cwd=ROOT, env=env, start_new_session=True, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:

            def up() -> bool:
                assert proc.poll() is None, "gunicorn exited"
                try:
                    return _get(port, "127.0.0.1", "/healthz").status in (200, 503)
                except OSError:
                    return False

            wait_for(up, 120, "gunicorn to answer")
            yield port
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(15)


def _get(port: int, source: str, path: str) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    conn.request(
        "GET", path, headers={"Host": "annotator.example.org", "X-Forwarded-Proto": "https"}
    )
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def test_forwarded_https_counts_from_the_proxy_only(web_host):
    # From the proxy's address: the scheme it forwarded is believed, the page is served.
    response = _get(web_host, "127.0.0.1", "/accounts/login/")
    assert response.status == 200, response.getheader("Location")
    # From anyone else: the same header is ignored, and plain HTTP is sent to HTTPS.
    response = _get(web_host, "127.0.0.2", "/accounts/login/")
    assert response.status == 301
    assert response.getheader("Location") == "https://annotator.example.org/accounts/login/"
