"""The interface's language: the switcher, the saved preference, the browser's Accept-Language.

Ada (an annotator) switches to 简体中文 and keeps it in a new session and another browser; a
visitor whose browser asks for zh-CN gets the login page in Chinese; the switcher refuses a
language the site does not speak and never sends anyone to another site.
"""

from __future__ import annotations

import pytest
from django.conf import settings
from django.template.loader import render_to_string
from django.test import Client
from django.urls import reverse
from django.utils import translation

from annotator.language import SESSION_KEY
from annotator.models import Preference
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

SWITCH = "/language/"


def signed_in(user, **headers) -> Client:
    """A new session (a new browser), signed in through the login page."""
    client = Client(**headers)
    response = client.post(reverse("login"), {"username": user.username, "password": PASSWORD})
    assert response.status_code == 302, response.content
    return client


def page(client: Client, url: str = "/", **headers) -> str:
    response = client.get(url, **headers)
    assert response.status_code == 200, (url, response.status_code)
    return response.content.decode()


def test_the_switcher_is_on_every_page_labelled_for_visitors_too(annotator):
    login_page = page(Client(), reverse("login"))
    assert 'action="/language/"' in login_page
    assert '<label for="language-select">Language</label>' in login_page
    assert '<option value="zh-hans" lang="zh-hans">简体中文</option>' in login_page
    assert '<option value="en" lang="en" selected>English</option>' in login_page
    assert 'id="language-switcher"' in page(signed_in(annotator))


def test_an_annotator_switches_to_chinese_and_keeps_it(annotator, project):
    client = signed_in(annotator)
    assert "Your projects" in page(client)

    response = client.post(SWITCH, {"language": "zh-hans", "next": "/?page=2"})
    assert response.status_code == 302
    assert response["Location"] == "/?page=2"
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    assert Preference.objects.get(user=annotator).language == "zh-hans"

    home = page(client)
    assert '<html lang="zh-hans">' in home
    assert "你的项目" in home and "Your projects" not in home
    assert "标注员" in home  # her role in the project list, translated
    assert "LLM issues pilot" in home  # the project's name is data: as written

    # A new session in another browser (no cookie), which asks for English: the saved
    # choice wins.
    elsewhere = signed_in(annotator, HTTP_ACCEPT_LANGUAGE="en")
    assert "你的项目" in page(elsewhere)


def test_the_saved_choice_wins_over_the_cookie_and_goes_back_to_english(annotator):
    Preference.objects.create(user=annotator, language="zh-hans")
    client = signed_in(annotator)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "en"
    assert "退出登录" in page(client)

    assert client.post(SWITCH, {"language": "en", "next": "/"}).status_code == 302
    assert Preference.objects.get(user=annotator).language == "en"
    assert "Log out" in page(client)


def test_without_a_saved_choice_the_browser_decides(annotator):
    client = signed_in(annotator)
    assert "你的项目" in page(client, HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9")
    assert "Your projects" in page(client, HTTP_ACCEPT_LANGUAGE="de-DE,en;q=0.5")
    assert not Preference.objects.filter(user=annotator).exists()


def test_a_visitor_whose_browser_asks_for_chinese_gets_the_login_page_in_chinese():
    login_page = page(Client(), reverse("login"), HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9,en;q=0.8")
    assert '<html lang="zh-hans">' in login_page
    assert "<h1>登录</h1>" in login_page
    assert '<label for="id_username">用户名</label>' in login_page
    assert '<option value="zh-hans" lang="zh-hans" selected>简体中文</option>' in login_page


def test_a_visitor_switches_by_the_cookie_alone():
    client = Client()
    response = client.post(SWITCH, {"language": "zh-hans", "next": reverse("login")})
    assert response.status_code == 302 and response["Location"] == reverse("login")
    assert "<h1>登录</h1>" in page(client, reverse("login"))
    assert not Preference.objects.exists()


@pytest.mark.parametrize("code", ["fr", "zh", "xx-evil", "", "zh-hans\x00"])
def test_a_language_the_site_does_not_speak_is_refused(annotator, code):
    client = signed_in(annotator)
    response = client.post(SWITCH, {"language": code, "next": "/"})
    assert response.status_code == 400
    assert settings.LANGUAGE_COOKIE_NAME not in response.cookies
    assert not Preference.objects.filter(user=annotator).exists()
    if "\x00" not in code:  # a NUL is refused before the view, by the input limits
        assert "language: choose one of en, zh-hans" in response.content.decode()


def test_no_language_at_all_is_refused():
    assert Client().post(SWITCH, {"next": "/"}).status_code == 400


@pytest.mark.parametrize(
    "outside",
    [
        "https://evil.example/",
        "//evil.example/phish",
        "http://testserver.evil.example/",
        "javascript:alert(1)",
        "\\\\evil.example",
        "https:///evil.example",
    ],
)
def test_a_next_outside_the_site_is_not_followed(annotator, outside):
    response = signed_in(annotator).post(SWITCH, {"language": "zh-hans", "next": outside})
    assert response.status_code == 302
    assert response["Location"] == reverse("home")
    assert Preference.objects.get(user=annotator).language == "zh-hans"


def test_the_switcher_takes_a_post_only(annotator):
    assert signed_in(annotator).get(SWITCH, {"language": "zh-hans"}).status_code == 405


def test_a_session_from_before_the_preference_finds_it(annotator):
    client = signed_in(annotator)
    session = client.session
    del session[SESSION_KEY]  # as a session made before the preference existed
    session.save()
    Preference.objects.create(user=annotator, language="zh-hans")
    assert "你的项目" in page(client)
    assert client.session[SESSION_KEY] == "zh-hans"


def test_the_project_page_and_its_form_errors_speak_chinese(lead, project):
    """A lead's refused pseudonym, in Chinese: the page is annotator's, the error
    annotator.accounts'; the members' usernames are data, as written."""
    Preference.objects.create(user=lead, language="zh-hans")
    client = signed_in(lead)
    member = project.memberships.get(user__username="ada-annotator")
    response = client.post(
        reverse("rename_member", args=[project.pk, member.pk]),
        {f"member-{member.pk}-pseudonym": "!bad"},
    )
    assert response.status_code == 400
    text = response.content.decode()
    assert "并以字母或数字开头" in text  # the pseudonym rule, in Chinese
    assert "<h2>成员</h2>" in text and "ada-annotator" in text
    assert 'aria-label="ada-annotator 的化名"' in text


def test_the_error_pages_speak_the_readers_language(annotator):
    client = signed_in(annotator, HTTP_ACCEPT_LANGUAGE="zh-hans")
    missing = client.get("/no-such-page/")
    assert missing.status_code == 404
    assert "<h1>页面不存在</h1>" in missing.content.decode()
    assert "Page not found" in Client().get("/no-such-page/").content.decode()
    with translation.override("zh-hans"):
        assert "<h1>服务器错误</h1>" in render_to_string("500.html")  # no request, no context
