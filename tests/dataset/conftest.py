"""Fixtures shared by the dataset tests."""

import pytest


@pytest.fixture
def export_root(settings, tmp_path):
    """Exports and releases write under a temporary EXPORT_ROOT."""
    settings.EXPORT_ROOT = tmp_path / "exports"
    return settings.EXPORT_ROOT
