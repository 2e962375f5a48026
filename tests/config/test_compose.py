"""docker-compose.yml, read as YAML (Docker is not available where the suite runs, so `docker
compose config` cannot check it): two web replicas behind the proxy, two workers, one beat,
every long-running service with a health check, and the forwarded headers trusted from the
proxy's address alone, which the nginx configuration it mounts sets and never passes through.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_the_services_and_their_replicas():
    services = _compose()["services"]
    assert services["web"]["deploy"]["replicas"] == 2
    assert services["worker"]["deploy"]["replicas"] == 2
    assert services["beat"].get("deploy", {}).get("replicas", 1) == 1
    for name in ("postgres", "redis", "web", "worker", "beat", "proxy"):
        assert services[name]["healthcheck"]["test"], name
    assert "/healthz" in " ".join(services["web"]["healthcheck"]["test"])
    # Only the proxy is published; the web replicas are on the private network.
    assert [n for n, s in services.items() if s.get("ports")] == ["proxy"]
    # Migrations once, before any replica.
    for name in ("web", "worker", "beat"):
        assert services[name]["depends_on"]["migrate"]["condition"] == (
            "service_completed_successfully"
        )
        assert "migrate" not in str(services[name]["command"])


def test_forwarded_headers_are_trusted_from_the_proxy_only():
    compose = _compose()
    services = compose["services"]
    proxy_ip = services["proxy"]["networks"]["backend"]["ipv4_address"]
    env = services["web"]["environment"]
    assert env["FORWARDED_ALLOW_IPS"] == proxy_ip
    assert env["METRICS_TRUSTED_PROXIES"] == f"{proxy_ip}/32"
    assert env["TRUST_X_FORWARDED_PROTO"] == "0"
    subnet = compose["networks"]["backend"]["ipam"]["config"][0]["subnet"]
    assert proxy_ip.rsplit(".", 1)[0] == subnet.split("/")[0].rsplit(".", 1)[0]

    nginx = (ROOT / "deploy" / "nginx.conf").read_text()
    mounted = [v.split(":")[0] for v in services["proxy"]["volumes"]]
    assert "./deploy/nginx.conf" in mounted
    assert re.search(r"listen 443 ssl;", nginx) and "ssl_certificate " in nginx
    assert "proxy_set_header X-Forwarded-Proto $scheme;" in nginx
    assert "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;" in nginx
    assert "server web:8000" in nginx
    assert "location = /proxy-health" in nginx
    assert nginx.count("{") == nginx.count("}")
