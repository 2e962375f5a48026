"""Fixtures shared by the dataset tests."""

import pytest
from django.utils import translation


@pytest.fixture
def export_root(settings, tmp_path):
    """Exports and releases write under a temporary EXPORT_ROOT."""
    settings.EXPORT_ROOT = tmp_path / "exports"
    return settings.EXPORT_ROOT


@pytest.fixture(autouse=True)
def _english_unless_asked():
    """Each test starts and ends in the default language: a request with Accept-Language
    activates its language in the thread (LocaleMiddleware), and the next test in the same
    process would read its strings in it."""
    translation.deactivate()
    yield
    translation.deactivate()
