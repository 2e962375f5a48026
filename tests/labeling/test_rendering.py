"""Issue text is hostile: Markdown rendering through the sanitizer."""

import re

import pytest

from labeling.rendering import render_markdown

PAYLOADS = [
    "<script>window.pwned = 1</script>",
    '<img src="x" onerror="window.pwned = 1">',
    "[click](javascript:window.pwned=1)",
    '<a href="JaVaScRiPt:window.pwned=1">x</a>',
    '<svg onload="window.pwned=1"><script>window.pwned=1</script></svg>',
    '<iframe src="https://evil.example"></iframe>',
    '<form action="https://evil.example"><input name="p"><button>go</button></form>',
    '<div style="background:url(javascript:1)" onclick="x()">hi</div>',
    '<object data="x.swf"></object><embed src="x.swf">',
    '<math><mtext><table><mglyph><style><img src=x onerror="window.pwned=1">',
]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_no_active_content_survives(payload):
    html = render_markdown(payload).lower()
    for bad in ("<script", "onerror=", "onload=", "onclick=", "<svg", "<iframe",
                "<form", "<input", "<object", "<embed", "style=", "<style"):  # fmt: skip
        assert bad not in html, (bad, html)
    # A refused link stays visible as text; no attribute may carry the scheme.
    assert not re.search(r"=\s*\"?\s*javascript:", html), html


def test_code_blocks_are_kept_and_escaped():
    html = render_markdown('```python\nprint("<script>alert(1)</script>")\n```')
    assert html.startswith("<pre><code>")
    assert "&lt;script&gt;" in html


def test_images_become_click_to_load_placeholders():
    html = render_markdown(
        '![trace](https://evil.example/a.png?x=1&y=2) <img src="http://t/x.gif">'
    )
    assert "<img" not in html
    assert 'data-src="https://evil.example/a.png?x=1&amp;y=2"' in html
    assert 'data-src="http://t/x.gif"' in html
    assert 'class="img-placeholder"' in html


def test_links_are_kept_without_referrer():
    html = render_markdown("[docs](https://pytorch.org/docs)")
    assert 'href="https://pytorch.org/docs"' in html
    assert "noopener" in html and "noreferrer" in html


def test_markdown_structure_survives():
    html = render_markdown(
        "# T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<details><summary>log</summary>x</details>"
    )
    assert "<h1>T</h1>" in html and "<table>" in html and "<details>" in html
