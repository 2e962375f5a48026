"""A lead cannot make the server fetch the internal network: API URLs name forge hosts or hosts
an admin listed, and addresses that are not public are refused after DNS, at request time too.

No traffic leaves 127.0.0.1: public addresses are only classified, never connected to.
"""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from ingest.hosts import (
    MODEL_API_HOSTS,
    ForgeSession,
    GuardedHTTPConnection,
    HostRefused,
    base_url_refused,
    check_api_url,
    public_addresses,
    refused_address,
    url_allowed,
    web_origin_ok,
)
from ingest.models import Repository, SyncRun
from ingest.runs import start_sync
from ingest.steps import run_inline
from tests.fakeforge import Recorder


@pytest.fixture
def nothing_listed(settings):
    """A deployment whose admin listed no extra forge host."""
    settings.FORGE_API_HOSTS = []
    settings.FORGE_TOKEN_HOSTS = []


@pytest.mark.parametrize(
    ("forge", "url", "why"),
    [
        ("github", "http://127.0.0.1:8080/api", "127.0.0.1 is not a forge API host"),
        ("github", "http://localhost/api", "localhost is not a forge API host"),
        ("gitlab", "https://10.0.0.5/api/v4", "10.0.0.5 is not a forge API host"),
        ("gitlab", "https://192.168.1.10/api/v4", "192.168.1.10 is not a forge API host"),
        ("github", "http://169.254.169.254/latest/meta-data", "169.254.169.254 is not a forge"),
        ("github", "https://api.github.com.attacker.example", "is not a forge API host"),
        ("github", "https://gitee.com/api/v5", "gitee.com is not a forge API host"),
        ("github", "http://api.github.com", "reached over https only"),
        # Issue #20, I2: the public hosts on a port they never serve.
        (
            "github",
            "https://api.github.com:8193",
            "api.github.com is reached over https only, on port 443",
        ),
        (
            "gitee",
            "https://gitee.com:8443/api/v5",
            "gitee.com is reached over https only, on port 443",
        ),
        (
            "gitlab",
            "https://gitlab.com:80/api/v4",
            "gitlab.com is reached over https only, on port 443",
        ),
        (
            "gitlab",
            "http://gitlab.com:443/api/v4",
            "gitlab.com is reached over https only, on port 443",
        ),
        ("github", "https://user:pw@api.github.com", "a user name or password"),
        ("github", "ftp://api.github.com/", "ftp scheme"),
        ("github", "https://api.github.com/?x=1", "no query or fragment"),
        ("github", "https://api.github.com/#top", "no query or fragment"),
    ],
)
def test_api_urls_off_the_forges_are_refused(nothing_listed, forge, url, why):
    with pytest.raises(HostRefused, match=why):
        check_api_url(forge, url)


def test_a_base_url_has_no_query_but_a_request_to_the_forge_may(settings):
    """One rule for the base URLs a lead configures (a forge API URL, a model endpoint): no
    query or fragment. A request's URL may have one: the forge's next page is `?page=2`."""
    settings.MODEL_API_HOSTS = ["models.lab.example"]
    for setting, url in [
        ("FORGE_API_HOSTS", "https://api.github.com/?per_page=100"),
        (MODEL_API_HOSTS, "https://models.lab.example/v1?api-version=1"),
        (MODEL_API_HOSTS, "https://models.lab.example/v1#x"),
    ]:
        assert base_url_refused(url, setting=setting) == "a base URL has no query or fragment"
    assert base_url_refused("https://models.lab.example/v1", setting=MODEL_API_HOSTS) == ""
    assert url_allowed("https://api.github.com/repos/o/r/issues?page=2&per_page=100") == ""


def test_forge_hosts_and_listed_hosts_are_accepted(settings):
    settings.FORGE_API_HOSTS = ["ghe.lab.example", "http://127.0.0.1:9999"]
    assert check_api_url("github", "https://api.github.com/") == "https://api.github.com"
    assert check_api_url("gitee", "https://gitee.com/api/v5") == "https://gitee.com/api/v5"
    assert check_api_url("github", "https://ghe.lab.example/api/v3") == (
        "https://ghe.lab.example/api/v3"
    )
    assert check_api_url("gitlab", "http://127.0.0.1:9999/gitlab/api/v4")
    # Listed without http://: https only; listed with a port: that port only.
    with pytest.raises(HostRefused, match="not allowed by FORGE_API_HOSTS"):
        check_api_url("github", "http://ghe.lab.example/api/v3")
    with pytest.raises(HostRefused, match="not allowed by FORGE_API_HOSTS"):
        check_api_url("github", "http://127.0.0.1:8080/github")


def test_the_public_forge_hosts_are_reached_on_port_443_only(settings):
    """Issue #20, I2: an explicit :443 is the standard port; no other port is theirs, even
    when an admin lists the host (an entry without a port allows any port of a listed host)."""
    assert check_api_url("github", "https://api.github.com:443") == "https://api.github.com:443"
    settings.FORGE_API_HOSTS = ["api.github.com", "gitlab.com", "http://github.com"]
    for url in ["https://api.github.com:8193", "https://gitlab.com:8443/api/v4"]:
        with pytest.raises(HostRefused, match="reached over https only, on port 443"):
            check_api_url("github" if "github" in url else "gitlab", url)
    # The session checks every request the same way (a next link, a redirect).
    with pytest.raises(HostRefused, match=r"api\.github\.com is reached over https only"):
        ForgeSession().get("https://api.github.com:8193/repos/acme/engine/issues", timeout=2)
    # An issue's link on a forge's web host: port 443 only too.
    repo = Repository(forge="github", api_url="https://api.github.com", owner="a", name="b")
    assert web_origin_ok(repo, "https://github.com/a/b/issues/1")
    assert web_origin_ok(repo, "https://github.com:443/a/b/issues/1")
    assert not web_origin_ok(repo, "https://github.com:8443/a/b/issues/1")


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.8.8", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.0.1", "private"),
        ("fd00::1", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped
        ("::ffff:10.0.0.1", "private"),
        ("2002:7f00:1::", "loopback"),  # 6to4 of 127.0.0.1
        ("64:ff9b::a00:1", "private"),  # NAT64 of 10.0.0.1
        ("100.64.0.1", "not a public"),  # carrier-grade NAT
        ("0.0.0.0", "not a public"),
        ("224.0.0.1", "not a public"),
    ],
)
def test_addresses_that_are_not_public_are_refused(address, kind):
    assert kind in refused_address(address)


@pytest.mark.parametrize("address", ["8.8.8.8", "140.82.112.6", "2606:4700:4700::1111"])
def test_public_addresses_pass(address):
    assert refused_address(address) == ""


def test_a_name_is_checked_after_dns_resolution():
    with pytest.raises(HostRefused, match=r"localhost resolves to .* loopback address"):
        public_addresses("localhost", 80)
    with pytest.raises(HostRefused, match="private address"):
        public_addresses("10.20.30.40", 443)  # a literal resolves to itself


def test_connections_to_a_loopback_name_are_refused_before_connecting(nothing_listed, settings):
    with Recorder() as internal:
        connection = GuardedHTTPConnection("localhost", internal.port, timeout=2)
        with pytest.raises(HostRefused, match="loopback"):
            connection.request("GET", "/admin")
        # The session refuses the host outright: not a forge, not listed.
        with pytest.raises(HostRefused, match="not a forge API host"):
            ForgeSession().get(f"{internal.url('localhost')}/admin", timeout=2)
        assert internal.requests == []
        # Listed by an admin, the same host is trusted (the tests' fake forge is on 127.0.0.1).
        settings.FORGE_API_HOSTS = ["http://localhost"]
        assert ForgeSession().get(f"{internal.url('localhost')}/ok", timeout=2).json() == []
        assert [path for path, _ in internal.requests] == ["/ok"]


@pytest.mark.django_db
def test_a_stored_repository_on_an_unlisted_host_is_refused_at_request_time(
    nothing_listed, fake, make_repo
):
    # Stored before the rule existed, or written straight to the database.
    forge_repo, repo = make_repo("github", "acme", "engine")
    forge_repo.add_issue(1)
    run = run_inline(start_sync(repo, enqueue=False))
    assert run.status == SyncRun.Status.FAILED
    assert "127.0.0.1 is not a forge API host" in run.errors[-1]["message"]
    assert fake.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_a_redirect_to_loopback_is_not_followed(fake, make_repo, host, settings):
    settings.FORGE_TOKENS = {"github": "ghp_R3alLookingT0kenAbcdefghijklmnopqrstu"}
    forge_repo, repo = make_repo("github", "acme", "engine")
    forge_repo.add_issue(1)
    with Recorder() as internal:
        target = f"{internal.url(host)}/latest/meta-data"
        fake.inject("redirect", "/issues", status=302, location=target)
        run = run_inline(start_sync(repo, enqueue=False))
        assert internal.requests == []
    assert run.status == SyncRun.Status.FAILED
    message = run.errors[-1]["message"]
    assert f"a redirect leads to another host (http://{host}:{internal.port}" in message
    assert fake.count("/issues", status=302) == 1


@pytest.mark.django_db
def test_a_redirect_within_the_forge_is_followed(fake, make_repo):
    forge_repo, repo = make_repo("github", "acme", "engine")
    forge_repo.add_issue(1)
    listing = "/repos/acme/engine/issues?state=all&sort=updated&direction=asc&per_page=100"
    fake.inject("redirect", "/issues", status=301, location=fake.api_url("github") + listing)
    run = run_inline(start_sync(repo, enqueue=False))
    assert run.status == SyncRun.Status.DONE and repo.issues.count() == 1


@pytest.mark.django_db
def test_a_lead_cannot_add_a_repository_on_the_internal_network(
    nothing_listed, client, project, lead, settings
):
    client.force_login(lead)
    for url in ["http://127.0.0.1:6379/", "http://localhost:5432", "https://10.0.0.1/api/v3"]:
        page = client.post(
            reverse("repositories"),
            {"forge": "github", "owner": "acme", "name": "engine", "api_url": url,
             "sync_interval_hours": "0", "project": project.pk},
        )  # fmt: skip
        assert page.status_code == 200
        assert "Not an API URL the server may fetch" in page.content.decode()
    assert not Repository.objects.exists()
    # Once an admin lists the host, the same lead may.
    settings.FORGE_API_HOSTS = ["http://127.0.0.1:6379"]
    done = client.post(
        reverse("repositories"),
        {"forge": "github", "owner": "acme", "name": "engine", "api_url": "http://127.0.0.1:6379/",
         "sync_interval_hours": "0", "project": project.pk},
    )  # fmt: skip
    assert done.status_code == 302
    assert Repository.objects.get().api_url == "http://127.0.0.1:6379"


@pytest.mark.django_db
def test_the_cli_refuses_an_unlisted_api_url(nothing_listed):
    out = io.StringIO()
    with pytest.raises(CommandError, match=r"--api-url: 127\.0\.0\.1 is not a forge API host"):
        call_command("sync", "github:acme/engine", "--api-url", "http://127.0.0.1:1/x", stdout=out)
    assert not Repository.objects.exists()
