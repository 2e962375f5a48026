"""The fuzzer behind tests/security/test_fuzz.py: routes from the URL conf, forms from the pages.

Nothing here names a page or a field. Routes come from `get_resolver()`, their path parameters
from the scenario's ids; every persona GETs every route; the `<form>`s of each page it is
allowed to see are read with an HTML parser (`html.parser`), and links' query strings give the
parameters a page reads; the API's query parameters and request bodies come from its OpenAPI
schema; the files an upload field is fed are the site's own downloads, mutated. Each probe is
one request; a `Finding` records a 5xx, a NUL that was not refused with a 400, and a refused
request that changed the database.
"""

from __future__ import annotations

import json
import mimetypes
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit

from django.contrib.messages import constants as message_levels
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import DatabaseError, connection, transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.urls.exceptions import Resolver404

NUL = "a\x00b"
# Over every column and text limit of the app (the largest varchar is 500, texts stop at 5,000).
OVERLONG = "x" * 70_000
# Parsed as JSON anywhere, this recurses until RecursionError.
NESTED = "[" * 50_000 + "]" * 50_000
VALUE_PROBES: list[tuple[str, str]] = [
    ("nul", NUL),
    ("overlong", OVERLONG),
    ("nested", NESTED),
    # Look-alikes: "²".isdigit() is true, int("²") fails; fullwidth and Cyrillic letters pass
    # for codes; bidi and zero-width characters hide in names.
    ("superscript digit", "²"),
    ("look-alike code", "\uff21.\uff11 \u0421.1 \u202e\u200b"),  # fullwidth A.1, Cyrillic C.1
    ("negative", "-1"),
    ("out of range", "99999"),
    ("huge", "1" + "0" * 30),
    ("not a number", "NaN"),
]
PATH_PROBES = {
    "int": [("bigint + 1", str(2**63)), ("huge", "1" + "0" * 30)],
    "str": [("nul", "%00"), ("overlong", "x" * 3000), ("look-alike", "%EF%BC%A1"), ("dots", "..")],
}
# Tables a refused request may still write: the session (messages, the login), the log of
# failed logins (django-axes counts refused passwords, by design).
UNWATCHED_TABLES = ("django_session", "axes_")


@dataclass
class Finding:
    problem: str
    method: str
    url: str
    where: str
    probe: str
    status: int
    detail: str = ""

    def __str__(self) -> str:
        return (
            f"{self.problem}: {self.method} {self.url[:120]} {self.where!r} <- {self.probe}"
            f" ({self.status}) {self.detail[:300]}"
        )


@dataclass
class Stats:
    routes: int = 0
    routes_skipped: list[str] = field(default_factory=list)
    urls: int = 0
    pages_with_forms: int = 0
    forms: int = 0
    fields: int = 0
    file_fields: int = 0
    api_operations: int = 0
    api_fields: int = 0
    requests: int = 0

    def summary(self) -> str:
        return (
            f"routes {self.routes} (skipped {len(self.routes_skipped)}), URLs {self.urls}, "
            f"forms {self.forms} on {self.pages_with_forms} pages, fields {self.fields} "
            f"(file fields {self.file_fields}), API operations {self.api_operations} "
            f"with {self.api_fields} fields, requests {self.requests}"
        )


# --- routes ----------------------------------------------------------------------------------

_PARAM = re.compile(r"<(?:(\w+):)?(\w+)>")


def routes(patterns=None, prefix: str = "") -> Iterator[str]:
    """Every route of the URL conf as a pattern string (Django's admin left out)."""
    for p in patterns if patterns is not None else get_resolver().url_patterns:
        if isinstance(p, URLResolver):
            if str(p.pattern).startswith("admin"):
                continue  # Django's own admin: its ModelForms refuse NUL and overlong values
            yield from routes(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern)


def expand(route: str, values: dict[str, list]) -> list[str]:
    """The route's URLs with each path parameter filled from `values` (every combination).

    A parameter the scenario has no value for gets 1 (int) or "x" (str): the route is still
    requested (a new page is covered), probably as a 404.
    """
    urls = ["/" + route]
    for converter, name in _PARAM.findall(route):
        fallback = ["1"] if converter == "int" else ["x"]
        options = [str(v) for v in values.get(name, fallback)]
        token = re.compile(rf"<(?:\w+:)?{name}>")
        urls = [token.sub(lambda _m, o=o: o, u, count=1) for u in urls for o in options]
    return urls


def path_probes(route: str, values: dict[str, list]) -> Iterator[tuple[str, str, str]]:
    """(url, parameter, probe name): each path parameter in turn replaced by a hostile value."""
    base = {n: [str(values.get(n, ["x"])[0])] for _, n in _PARAM.findall(route)}
    for converter, name in _PARAM.findall(route):
        for probe_name, value in PATH_PROBES["int" if converter == "int" else "str"]:
            for url in expand(route, {**base, name: [value]}):
                yield url, name, probe_name


# --- forms -----------------------------------------------------------------------------------


@dataclass
class Field:
    name: str
    kind: str  # the input's type, or select / textarea / submit
    values: list[str] = field(default_factory=list)  # what the page sends by default
    options: list[str] = field(default_factory=list)
    accept: str = ""  # a file input's `accept`

    def accepts(self, filename: str) -> bool:
        """Whether a browser would offer the file (any file where `accept` is not set)."""
        if not self.accept or filename.endswith(".bin"):
            return True
        tokens = {t.strip().lower() for t in self.accept.split(",")}
        extension = "." + filename.rsplit(".", 1)[-1].lower()
        return extension in tokens or mimetypes.guess_type(filename)[0] in tokens


@dataclass
class Form:
    page: str
    action: str
    method: str
    multipart: bool
    fields: dict[str, Field] = field(default_factory=dict)

    def defaults(self) -> dict[str, list[str]]:
        """What a browser would send: values, checked boxes, selected (else first) options."""
        data: dict[str, list[str]] = {}
        for f in self.fields.values():
            if f.kind == "file" or f.name == "csrfmiddlewaretoken":
                continue
            if f.kind == "select" and not f.values:
                chosen = [o for o in f.options if o] or f.options
                data[f.name] = chosen[:1]
            elif f.kind in ("radio", "submit") and not f.values and f.options:
                data[f.name] = f.options[:1]
            else:
                data[f.name] = list(f.values)
        return data

    def key(self) -> tuple:
        """Forms alike whatever the ids in their address (the same form for another issue)."""
        try:
            name = resolve(urlsplit(self.action).path).url_name
        except Resolver404:
            name = urlsplit(self.action).path
        hidden = tuple(
            sorted((f.name, tuple(f.values)) for f in self.fields.values() if f.name == "action")
        )
        return (name, self.method, tuple(sorted(self.fields)), hidden)


class FormParser(HTMLParser):
    """The `<form>`s of a page with their fields, and the query parameters its links use."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.page = page
        self.forms: list[Form] = []
        self.link_params: set[str] = set()
        self._form: Form | None = None
        self._select: Field | None = None
        self._option: dict | None = None
        self._textarea: Field | None = None

    def _field(self, name: str, kind: str) -> Field:
        assert self._form is not None
        return self._form.fields.setdefault(name, Field(name, kind))

    def handle_starttag(self, tag: str, attrs) -> None:
        a = {k: (v if v is not None else "") for k, v in attrs}
        if tag == "a" and "href" in a:
            parts = urlsplit(urljoin(self.page, a["href"]))
            if parts.path == urlsplit(self.page).path:
                self.link_params.update(k for k, _ in parse_qsl(parts.query, True))
        if tag == "form":
            action = urljoin(self.page, a.get("action") or self.page).split("#")[0]
            self._form = Form(
                self.page,
                action,
                (a.get("method") or "get").lower(),
                "multipart" in a.get("enctype", ""),
            )
            self.forms.append(self._form)
            return
        if self._form is None or not a.get("name"):
            if tag == "option" and self._select is not None:
                self._option = {"value": a.get("value"), "selected": "selected" in a, "text": ""}
            return
        name = a["name"]
        if tag == "input":
            kind = a.get("type", "text").lower()
            if kind in ("button", "reset", "image"):
                return
            f = self._field(name, kind)
            f.accept = a.get("accept", "")
            if kind in ("checkbox", "radio", "submit"):
                f.options.append(a.get("value", "on"))
                if "checked" in a:
                    f.values.append(a.get("value", "on"))
            elif kind != "file":
                f.values.append(a.get("value", ""))
        elif tag == "button" and a.get("type", "submit") == "submit":
            self._field(name, "submit").options.append(a.get("value", ""))
        elif tag == "select":
            self._select = self._field(name, "select")
        elif tag == "textarea":
            self._textarea = self._field(name, "textarea")
            self._textarea.values.append("")

    def handle_data(self, data: str) -> None:
        if self._option is not None:
            self._option["text"] += data
        if self._textarea is not None:
            self._textarea.values[-1] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "option" and self._option is not None and self._select is not None:
            value = self._option["value"]
            value = self._option["text"].strip() if value is None else value
            self._select.options.append(value)
            if self._option["selected"]:
                self._select.values.append(value)
            self._option = None
        elif tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None
        elif tag == "form":
            self._form = None


def parse_page(url: str, html: str) -> FormParser:
    parser = FormParser(url)
    parser.feed(html)
    parser.close()
    return parser


# --- the database --------------------------------------------------------------------------


def writes() -> dict[str, int]:
    """Rows inserted, updated and deleted so far in this transaction, per watched table.

    PostgreSQL's own counters (`pg_stat_xact_user_tables`): one cheap statement, and an update
    that changes nothing still counts.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_xact_user_tables"
        )
        return {t: n for t, n in cursor.fetchall() if not t.startswith(UNWATCHED_TABLES)}


# --- requests ----------------------------------------------------------------------------------


def refused(response, method: str) -> bool:
    """Whether the app said no: a 4xx, an error message, or a POST answered with the form again.

    (A POST that is taken is answered with a redirect everywhere in the app.)
    """
    if response.status_code >= 400:
        return True
    storage = getattr(response.wsgi_request, "_messages", None)
    # Only the messages added by this request, not those left over from earlier ones.
    queued = getattr(storage, "_queued_messages", [])
    if any(m.level >= message_levels.ERROR for m in queued):
        return True
    return method == "POST" and response.status_code == 200


@contextmanager
def isolated():
    """A request in a savepoint, rolled back if it failed: a database error in one request (a
    500) must not abort the test's transaction for the requests after it."""
    savepoint = transaction.savepoint()
    try:
        yield
    except BaseException:
        transaction.savepoint_rollback(savepoint)
        raise
    try:
        if connection.needs_rollback:  # an atomic block of the view failed
            raise DatabaseError
        transaction.savepoint_commit(savepoint)
    except DatabaseError:  # or the server's transaction is aborted
        connection.needs_rollback = False  # (as Atomic.__exit__ does before its rollback)
        transaction.savepoint_rollback(savepoint)


class Prober:
    """Sends requests as personas and records what went wrong."""

    def __init__(self, clients: dict[str, Client], stats: Stats) -> None:
        self.clients = clients
        self.stats = stats
        self.findings: list[Finding] = []

    def get(self, persona: str, url: str, where: str = "", probe: str = "", **extra):
        self.stats.requests += 1
        with isolated():
            response = self.clients[persona].get(url, **extra)
        self._check(response, "GET", url, where, probe)
        return response

    def send(
        self,
        persona: str,
        method: str,
        url: str,
        where: str,
        probe: str,
        *,
        data=None,
        content_type: str | None = None,
    ):
        """One request that may write; a refused one must leave the database as it was."""
        before = writes()
        self.stats.requests += 1
        client = self.clients[persona]
        kwargs = {"content_type": content_type} if content_type else {}
        with isolated():
            response = getattr(client, method.lower())(url, data, **kwargs)
        self._check(response, method, url, where, probe)
        if response.status_code < 500 and refused(response, method):
            after = writes()
            changed = sorted(t for t in after if after[t] != before.get(t, 0))
            if changed:
                self.findings.append(
                    Finding(
                        "refused but written",
                        method,
                        url,
                        where,
                        probe,
                        response.status_code,
                        ", ".join(changed),
                    )
                )
        return response

    def _check(self, response, method: str, url: str, where: str, probe: str) -> None:
        if response.status_code >= 500:
            self.findings.append(Finding("5xx", method, url, where, probe, response.status_code))
        elif probe == "nul" and response.status_code != 400:
            self.findings.append(
                Finding("NUL not refused with 400", method, url, where, probe, response.status_code)
            )
        elif probe == "nul" and where not in _said(response):
            self.findings.append(
                Finding("400 does not name the field", method, url, where, probe, 400)
            )


def _said(response) -> str:
    """The text of a response, JSON strings decoded."""
    text = response.content.decode(errors="replace")
    if response.get("Content-Type", "").startswith("application/json"):
        data = json.loads(text)
        return " ".join(map(str, data.values())) if isinstance(data, dict) else text
    return text


def _form_payload(form: Form, data: dict[str, list[str]], files: dict | None = None):
    """What a browser sends for the form: multipart with files, else URL-encoded."""
    if form.multipart:
        payload: dict = {k: v for k, v in data.items()}
        payload.update(files or {})
        return payload, None
    return urlencode(data, doseq=True), "application/x-www-form-urlencoded"


def fuzz_form(prober: Prober, persona: str, form: Form, file_probes: list[tuple[str, bytes, str]]):
    """Every field of the form with every probe, the other fields as the page fills them."""
    base = form.defaults()
    method = "POST" if form.method == "post" else "GET"
    names = [n for n in form.fields if n != "csrfmiddlewaretoken"]
    prober.stats.fields += len(names)
    if method == "GET":
        for name in names:
            for probe, value in VALUE_PROBES:
                prober.send(persona, "GET", form.action, name, probe, data={**base, name: value})
        return
    prober.clients[persona].cookies.pop("messages", None)
    payload, content_type = _form_payload(form, base)
    prober.send(
        persona, "POST", form.action, "(defaults)", "", data=payload, content_type=content_type
    )
    for name in names:
        if form.fields[name].kind == "file":
            prober.stats.file_fields += 1
            for probe, content, filename in file_probes:
                if not form.fields[name].accepts(filename):
                    continue
                upload = SimpleUploadedFile(filename, content)
                payload, content_type = _form_payload(form, base, {name: upload})
                prober.send(persona, "POST", form.action, name, probe, data=payload)
            continue
        for probe, value in VALUE_PROBES:
            payload, content_type = _form_payload(form, {**base, name: [value]})
            prober.send(
                persona, "POST", form.action, name, probe, data=payload, content_type=content_type
            )
    payload, content_type = _form_payload(form, {**base, "x\x00": ["1"]})
    prober.send(
        persona, "POST", form.action, "x\\x00", "nul", data=payload, content_type=content_type
    )


# --- files for upload fields: the site's own downloads, mutated --------------------------------


def file_probes(seeds: dict[str, bytes], max_upload: int) -> list[tuple[str, bytes, str]]:
    """Hostile files made from the CSV and JSON files the site serves (one of each shape)."""
    probes: list[tuple[str, bytes, str]] = [
        # Named .bin: offered to every file field, whatever it accepts.
        ("empty file", b"", "empty.bin"),
        ("not UTF-8", b"\xff\xfe\xfa broken", "broken.bin"),
        ("deep JSON", NESTED.encode(), "deep.json"),
    ]
    first = next(iter(seeds.values()), b"{}")
    probes.append(("over MAX_UPLOAD_BYTES", first + b" " * (max_upload + 1), "large.bin"))
    for name, content in seeds.items():
        text = content.decode("utf-8-sig")
        if name.endswith(".json"):
            probes += _json_mutations(name, text)
        else:
            probes += _csv_mutations(name, text)
    return probes


def _string_paths(value, path=()) -> Iterator[tuple]:
    if isinstance(value, str):
        yield path
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _string_paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _string_paths(v, (*path, i))


def _replaced(doc, path: tuple, new):
    doc = json.loads(json.dumps(doc))
    target = doc
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return doc


def _json_mutations(name: str, text: str) -> list[tuple[str, bytes, str]]:
    """For each key holding text (its first occurrence): a NUL in it, then far too much of it."""
    doc = json.loads(text)
    out, seen = [], set()
    for path in _string_paths(doc):
        key = next((p for p in reversed(path) if isinstance(p, str)), "")
        if key in seen:
            continue
        seen.add(key)
        for probe, value in (("nul in file", NUL), ("overlong in file", OVERLONG)):
            mutated = json.dumps(_replaced(doc, path, value), ensure_ascii=False)
            out.append((f"{probe} {name}:{key}", mutated.encode(), name))
    lists = [p for p in _list_paths(doc)][:1]
    for path in lists:
        mutated = json.dumps(_replaced(doc, path, "__DEEP__")).replace('"__DEEP__"', NESTED)
        out.append((f"deep in file {name}", mutated.encode(), name))
    return out


def _list_paths(value, path=()) -> Iterator[tuple]:
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, list):
                yield (*path, k)
            yield from _list_paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _list_paths(v, (*path, i))


def _csv_mutations(name: str, text: str) -> list[tuple[str, bytes, str]]:
    """For each column of the first row: a NUL, then a value over every column limit; and one
    cell over the csv module's field limit (128 KiB)."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return []
    header = rows[0]
    row = rows[1] if len(rows) > 1 else ["x"] * len(header)

    def as_csv(cells: list[str]) -> bytes:
        out = io.StringIO()
        csv.writer(out).writerows([header, cells])
        return out.getvalue().encode()

    probes = []
    for i, column in enumerate(header):
        for probe, value in (("nul in file", NUL), ("overlong in file", OVERLONG)):
            cells = list(row)
            cells[i] = value
            probes.append((f"{probe} {name}:{column}", as_csv(cells), name))
    cells = list(row)
    cells[0] = "y" * 140_000
    probes.append((f"cell over the csv field limit {name}", as_csv(cells), name))
    return probes


# --- the API --------------------------------------------------------------------------------


def schema_path(route: str) -> str:
    return "/" + _PARAM.sub(lambda m: "{" + m.group(2) + "}", route)


def api_operations(schema: dict, route: str) -> Iterable[tuple[str, list[str], list[str]]]:
    """(method, query parameters, body fields) of each operation the schema gives the route."""
    for method, op in schema.get("paths", {}).get(schema_path(route), {}).items():
        if not isinstance(op, dict):
            continue
        query = [p["name"] for p in op.get("parameters", []) if p.get("in") == "query"]
        body_fields: list[str] = []
        for media in op.get("requestBody", {}).get("content", {}).values():
            body_schema = media.get("schema", {})
            ref = body_schema.get("$ref", "")
            if ref:
                body_schema = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]
            for name in body_schema.get("properties", {}):
                if name not in body_fields:
                    body_fields.append(name)
        yield method.upper(), query, body_fields


def json_bodies(fields: list[str]) -> Iterator[tuple[str, str, str]]:
    """(where, probe, JSON text): each field with each value probe, nesting, a NUL key."""
    for name in fields or ["x"]:
        for probe, value in VALUE_PROBES:
            if probe != "nested":
                yield name, probe, json.dumps({name: value})
        yield name, "nested", '{"' + name + '": ' + NESTED + "}"
    yield "x\\x00", "nul", '{"x\\u0000": 1}'
    yield "(body)", "nested", NESTED
