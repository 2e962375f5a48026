"""The Simplified Chinese catalogue and the templates stay complete (issue #24).

* every entry of `locale/zh_Hans/LC_MESSAGES/{django,djangojs}.po` is translated, none fuzzy, and
  each keeps its message's placeholders (`%(name)s`, `%s`, `{name}`) and HTML tags;
* the compiled `.mo` files hold what the `.po` files say (`bin/messages` was run after an edit);
* the catalogue holds every string the code marks (a fresh extraction, as `bin/messages` makes
  it, finds nothing more and nothing less);
* no template shows text outside the translation tags (`untranslated_text`, a linter: text
  nodes and the attributes people read, with the template and line named).

`bin/messages` refreshes and compiles the catalogues; docs/CONVENTIONS.md "Internationalisation".
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import polib
import pytest
from django.template.base import DebugLexer, TokenType

ROOT = Path(__file__).resolve().parent.parent
MESSAGES = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES"
DOMAINS = ("django", "djangojs")
TEMPLATES = ROOT / "templates"


# --- The catalogue ------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(
    r"%\([A-Za-z_]\w*\)[#0 +-]?\d*(?:\.\d+)?[sdifr]"  # %(name)s, %(count)d
    r"|%[#0 +-]?\d*(?:\.\d+)?[sdifr]"  # %s, %d
    r"|\{[A-Za-z_]\w*\}|\{\d*\}"  # {name}, {0}, {}
    r"|</?[A-Za-z][^<>]*>"  # HTML tags, attributes included
)


def placeholders(text: str) -> Counter[str]:
    """The placeholders and HTML tags of a message, each with how often it occurs."""
    return Counter(_PLACEHOLDER.findall(text.replace("%%", "")))


def _entry_name(entry: polib.POEntry) -> str:
    context = f" (context {entry.msgctxt!r})" if entry.msgctxt else ""
    return f"{entry.msgid!r}{context}"


def catalogue_problems(catalogue: polib.POFile) -> list[str]:
    """Each entry that is untranslated, fuzzy, or whose translation changes a placeholder."""
    problems = []
    for entry in catalogue:
        if entry.obsolete:
            continue
        if "fuzzy" in entry.flags:
            problems.append(f"{_entry_name(entry)}: fuzzy")
            continue
        if not entry.translated():
            problems.append(f"{_entry_name(entry)}: not translated")
            continue
        if entry.msgid_plural:
            pairs = [(entry.msgid_plural, text) for text in entry.msgstr_plural.values()]
        else:
            pairs = [(entry.msgid, entry.msgstr)]
        for source, translation in pairs:
            want, got = placeholders(source), placeholders(translation)
            if want != got:
                problems.append(
                    f"{_entry_name(entry)}: placeholders {sorted(want.elements())} "
                    f"became {sorted(got.elements())} in {translation!r}"
                )
    return problems


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_message_is_translated_with_its_placeholders(domain):
    problems = catalogue_problems(polib.pofile(str(MESSAGES / f"{domain}.po")))
    assert not problems, f"{domain}.po (fill in, then run bin/messages):\n" + "\n".join(problems)


def test_the_catalogue_check_fires_on_each_kind_of_fault():
    catalogue = polib.POFile()
    catalogue.append(polib.POEntry(msgid="Save", msgstr="保存"))
    catalogue.append(polib.POEntry(msgid="Skip", msgstr=""))
    catalogue.append(polib.POEntry(msgid="Next", msgstr="下一个", flags=["fuzzy"]))
    catalogue.append(polib.POEntry(msgid="%(count)d issues", msgstr="%(n)d 个议题"))
    catalogue.append(polib.POEntry(msgid="Hi %s", msgstr="你好"))
    catalogue.append(polib.POEntry(msgid="See <a href='%(u)s'>it</a>", msgstr="见 %(u)s"))
    catalogue.append(polib.POEntry(msgid="{name} left", msgstr="{name} 已离开"))
    catalogue.append(
        polib.POEntry(
            msgid="%(n)d label",
            msgid_plural="%(n)d labels",
            msgstr_plural={0: "%(n)d 个标注"},
        )
    )
    catalogue.append(polib.POEntry(msgid="100%% sure", msgstr="百分之百"))
    found = catalogue_problems(catalogue)
    named = [line.split(":")[0] for line in found]
    assert named == [
        "'Skip'",
        "'Next'",
        "'%(count)d issues'",
        "'Hi %s'",
        "\"See <a href='%(u)s'>it</a>\"",
    ], found


def _messages(entries) -> dict[tuple[str, str], object]:
    return {
        (entry.msgctxt or "", entry.msgid): (
            dict(entry.msgstr_plural) if entry.msgid_plural else entry.msgstr
        )
        for entry in entries
        if entry.msgid  # the header
    }


def compiled_differences(po_path: Path, mo_path: Path) -> list[str]:
    """How the compiled catalogue differs from what its .po file compiles to (msgfmt leaves
    untranslated and fuzzy entries out)."""
    source = polib.pofile(str(po_path))
    wanted = _messages(e for e in source.translated_entries() if not e.obsolete)
    compiled = _messages(polib.mofile(str(mo_path)))
    differences = [f"{key}: missing from the .mo" for key in wanted.keys() - compiled.keys()]
    differences += [f"{key}: no longer in the .po" for key in compiled.keys() - wanted.keys()]
    differences += [
        f"{key}: {compiled[key]!r} in the .mo, {wanted[key]!r} in the .po"
        for key in wanted.keys() & compiled.keys()
        if compiled[key] != wanted[key]
    ]
    return sorted(differences)


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_compiled_catalogue_is_up_to_date(domain):
    differences = compiled_differences(MESSAGES / f"{domain}.po", MESSAGES / f"{domain}.mo")
    assert not differences, f"{domain}.mo is stale (run bin/messages):\n" + "\n".join(differences)


def test_a_stale_compiled_catalogue_is_found(tmp_path):
    catalogue = polib.POFile()
    catalogue.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    catalogue.append(polib.POEntry(msgid="Save", msgstr="保存"))
    catalogue.save_as_mofile(str(tmp_path / "x.mo"))
    catalogue.append(polib.POEntry(msgid="Skip", msgstr="跳过"))
    catalogue[0].msgstr = "存储"
    catalogue.save(str(tmp_path / "x.po"))
    assert compiled_differences(tmp_path / "x.po", tmp_path / "x.mo") == [
        "('', 'Save'): '保存' in the .mo, '存储' in the .po",
        "('', 'Skip'): missing from the .mo",
    ]


# What bin/messages leaves out of the extraction, and what a copy of the tree needs not hold.
_NOT_COPIED = shutil.ignore_patterns(
    ".venv", ".git", "data", "tests", "bench", "docs", "node_modules", "staticfiles", "__pycache__"
)
_IGNORED = ["static/vendor/*", "locale/*"]


def _msgids(path: Path) -> set[tuple[str, str]]:
    entries = polib.pofile(str(path))
    return {(entry.msgctxt or "", entry.msgid) for entry in entries if not entry.obsolete}


@pytest.mark.slow
def test_the_catalogue_holds_every_marked_string(tmp_path):
    """makemessages over a copy of the tree, as bin/messages runs it: the committed catalogue
    must name exactly the messages it finds."""
    tree = tmp_path / "tree"
    shutil.copytree(ROOT, tree, ignore=_NOT_COPIED)
    shutil.rmtree(tree / "locale")
    (tree / "locale").mkdir()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or "catalogues-only",
    }
    for domain in DOMAINS:
        ignore = [arg for pattern in _IGNORED for arg in ("--ignore", pattern)]
        done = subprocess.run(
            [
                *(sys.executable, "manage.py", "makemessages", "-l", "zh_Hans", "-d", domain),
                *("--no-location", "--no-obsolete", "--no-wrap", *ignore),
            ],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
    for domain in DOMAINS:
        extracted = tree / "locale" / "zh_Hans" / "LC_MESSAGES" / f"{domain}.po"
        found = _msgids(extracted) if extracted.exists() else set()
        committed = _msgids(MESSAGES / f"{domain}.po")
        missing, stale = sorted(found - committed), sorted(committed - found)
        assert not missing and not stale, (
            f"{domain}.po is out of date (run bin/messages):\n"
            + "".join(f"  missing {context or ''}{msgid!r}\n" for context, msgid in missing)
            + "".join(f"  no longer used {context or ''}{msgid!r}\n" for context, msgid in stale)
        )


# --- Templates: no text outside the translation tags ----------------------------------------

# Stands where a template tag, a variable or a translated block was: not a letter.
PLACEHOLDER = "\ue000"
# Text people read is checked outside these; their content is code, keys or styles.
_UNCHECKED_ELEMENTS = frozenset({"script", "style", "code", "pre", "kbd"})
_READ_ATTRIBUTES = frozenset(
    {"title", "alt", "placeholder", "aria-label", "aria-description", "aria-valuetext"}
    | {"hx-confirm"}
)
_BUTTON_INPUTS = frozenset({"submit", "button", "reset"})
_VOID_ELEMENTS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}
    | {"track", "wbr"}
)
_ENTITY = re.compile(r"&(?:[A-Za-z]+\d*|#\d+|#[xX][0-9A-Fa-f]+);")
_OPENS_BLOCK = {
    "blocktranslate": "endblocktranslate",
    "blocktrans": "endblocktrans",
    "comment": "endcomment",
    "verbatim": "endverbatim",
}
# Blocks whose content is CSS class names, not words (`{% block main_class %}container wide…`).
_CLASS_BLOCKS = frozenset({"main_class"})
# The statistics' own symbols read alike in every language: sample size n, K labels, kappa, alpha.
_SYMBOLS = re.compile(r"(?<!\w)(?:n|K|κ|\u03b1)(?!\w)")


def _blank(text: str) -> str:
    """A placeholder for `text`, keeping its line breaks so that line numbers stay right."""
    return PLACEHOLDER + "\n" * text.count("\n")


def without_template_syntax(source: str) -> str:
    """The template with every tag, variable and comment, and every whole blocktranslate,
    comment and verbatim block, replaced by a placeholder: what is left is literal text."""
    out: list[str] = []
    closing: str | None = None  # inside a block that is replaced whole
    start = 0
    for token in DebugLexer(source).tokenize():
        begin, end = token.position
        piece = source[begin:end]
        if closing is not None:
            if token.token_type == TokenType.BLOCK and token.contents.split()[0] == closing:
                out.append(_blank(source[start:end]))
                closing = None
            continue
        if token.token_type == TokenType.TEXT:
            out.append(piece)
            continue
        name = token.contents.split()[0] if token.contents.split() else ""
        if token.token_type == TokenType.BLOCK and name in _OPENS_BLOCK:
            closing, start = _OPENS_BLOCK[name], begin
            continue
        if (
            name == "block"
            and token.contents.split()[1:2]
            and token.contents.split()[1] in _CLASS_BLOCKS
        ):
            closing, start = "endblock", begin
            continue
        out.append(_blank(piece))
    if closing is not None:
        out.append(_blank(source[start:]))
    return "".join(out)


def _has_words(text: str) -> bool:
    text = _SYMBOLS.sub("", _ENTITY.sub("", text.replace(PLACEHOLDER, "")))
    return any(char.isalpha() for char in text)


class _TextFinder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.found: list[tuple[int, str]] = []
        self.unchecked: list[str] = []  # open elements whose content is not read as text

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        line = self.getpos()[0]
        values = dict(attrs)
        for name, value in attrs:
            read = name in _READ_ATTRIBUTES or (
                name == "value"
                and tag == "input"
                and (values.get("type") or "").lower() in _BUTTON_INPUTS
            )
            if read and value and _has_words(value):
                self.found.append((line, f'{tag} {name}="{value.replace(PLACEHOLDER, "…")}"'))
        if tag in _UNCHECKED_ELEMENTS and tag not in _VOID_ELEMENTS:
            self.unchecked.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag in _UNCHECKED_ELEMENTS:
            self.unchecked.pop()

    def handle_endtag(self, tag: str) -> None:
        if tag in self.unchecked:
            while self.unchecked and self.unchecked.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if not self.unchecked and _has_words(data):
            # The line of the first word, not of the line break before it.
            line = self.getpos()[0] + data[: len(data) - len(data.lstrip())].count("\n")
            self.found.append((line, " ".join(data.replace(PLACEHOLDER, "…").split())))

    def handle_entityref(self, name: str) -> None:  # &amp; and the like: not words
        pass

    def handle_charref(self, name: str) -> None:
        pass


def untranslated_text(source: str) -> list[tuple[int, str]]:
    """(line, text) of every text node and read attribute of the template that holds words
    outside `{% translate %}` / `{% blocktranslate %}`."""
    finder = _TextFinder()
    finder.feed(without_template_syntax(source))
    finder.close()
    return finder.found


def _templates() -> list[Path]:
    return sorted(TEMPLATES.rglob("*.html"))


@pytest.mark.parametrize("path", _templates(), ids=lambda p: str(p.relative_to(TEMPLATES)))
def test_no_template_text_outside_the_translation_tags(path):
    found = untranslated_text(path.read_text(encoding="utf-8"))
    where = path.relative_to(ROOT)
    assert not found, "text outside {% translate %} / {% blocktranslate %}:\n" + "\n".join(
        f"  {where}:{line}: {text}" for line, text in found
    )


def test_the_template_linter_names_untranslated_text_and_its_line():
    template = (
        '{% load i18n %}<p title="{% translate "Hint" %}">{% translate "Saved" %}</p>\n'
        "<h1>{% block title %}Projects{% endblock %}</h1>\n"
        '<button aria-label="close">&times;</button>\n'
        '<input type="submit" value="Save"><input type="text" value="typed data">\n'
        "<p>{% blocktranslate trimmed with n=count %}\n{{ n }} issues left\n"
        "{% endblocktranslate %}</p>\n"
        "<p>{{ issue.title }} · 12 &middot; {% comment %}a note{% endcomment %}</p>\n"
        "<kbd>J</kbd><code>Token</code><script>const a = 'x';</script>\n"
        "{# a comment #}<p>\n  Left untranslated\n</p>\n"
        '<span hx-confirm="Delete it?">{% translate "Delete" %}</span>\n'
    )
    assert untranslated_text(template) == [
        (2, "…Projects…"),
        (3, 'button aria-label="close"'),
        (4, 'input value="Save"'),
        (11, "Left untranslated"),
        (13, 'span hx-confirm="Delete it?"'),
    ]


def test_the_template_linter_passes_translated_text():
    template = (
        '{% load i18n %}<h1 title="{% translate "Hint" %}">{% translate "Projects" %}</h1>\n'
        '<input type="submit" value="{% translate "Save" %}">\n'
        "<p>{% blocktranslate %}{{ n }} left{% endblocktranslate %} · {{ issue.title }}</p>\n"
        '{% block main_class %}container wide{% endblock %}<th class="num">n</th><td>κ 0.61</td>'
    )
    assert untranslated_text(template) == []


def test_a_symbol_inside_a_word_is_still_text():
    assert untranslated_text("<th>Kappa n-gram</th>") == [(1, "Kappa n-gram")]
