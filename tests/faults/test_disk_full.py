"""The disk fills up while an export or a release is written: the job fails with an error that
says so, no partial file is left or offered for download, and the next attempt once space is
back succeeds.

The exports directory is a small tmpfs of the test's own (mounted as root; skipped where the
machine allows no mount), filled to the last byte by a file the test then deletes.
"""

from __future__ import annotations

import errno
import io
import os
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.urls import reverse

from dataset.exports import run_export_job
from dataset.models import ExportJob, Release
from dataset.releases import build_release, create_release
from labeling.models import ProjectIssue
from tests.builders import final_issue

pytestmark = [pytest.mark.slow]


@pytest.fixture
def small_disk(tmp_path, settings) -> Iterator[Path]:
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a small file system needs root")
    mountpoint = tmp_path / "exports"
    mountpoint.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=512k,mode=0700", "tmpfs", str(mountpoint)],
        capture_output=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    settings.EXPORT_ROOT = mountpoint
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=True, timeout=30)


def fill(disk: Path) -> Path:
    """Write until the disk refuses: not one byte left."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


def left_behind(disk: Path) -> list[str]:
    """Files (not folders) on the disk but the filler."""
    return sorted(
        str(p.relative_to(disk)) for p in disk.rglob("*") if p.is_file() and p.name != "filler"
    )


@pytest.fixture
def study(project, issues_in_project):
    project.annotations_per_issue = 2
    project.save()
    for item in ProjectIssue.objects.filter(project=project).order_by("position")[:4]:
        final_issue(project, item, "C.1", "C.1")
    return project


DISK_FULL = "disk is full"


def test_an_export_on_a_full_disk_fails_clearly_and_succeeds_once_space_is_back(
    small_disk, study, lead, client
):
    job = ExportJob.objects.create(project=study, requested_by=lead)
    filler = fill(small_disk)
    with pytest.raises(OSError) as raised:
        run_export_job(job.pk)
    assert raised.value.errno == errno.ENOSPC  # the fault really happened
    job.refresh_from_db()
    assert job.status == ExportJob.Status.FAILED and DISK_FULL in job.error
    assert str(small_disk) not in job.error  # no server path in what the lead reads
    assert left_behind(small_disk) == []
    client.force_login(lead)
    download = reverse("export_download", args=[study.pk, job.pk])
    assert client.get(download).status_code == 404
    page = client.get(reverse("exports", args=[study.pk])).content.decode()
    assert DISK_FULL in page

    filler.unlink()  # space is back: the same job, asked again, is built
    run_export_job(job.pk)
    job.refresh_from_db()
    assert job.status == ExportJob.Status.DONE and job.error == ""
    response = client.get(download)
    assert response.status_code == 200
    body = b"".join(response.streaming_content)
    assert len(body) == job.size
    assert zipfile.ZipFile(io.BytesIO(body)).testzip() is None
    assert left_behind(small_disk) == [job.file_path]


def test_a_release_on_a_full_disk_fails_clearly_and_the_next_one_is_published(
    small_disk, study, lead, client
):
    filler = fill(small_disk)
    failed = create_release(study, lead, "1.0.0")
    with pytest.raises(OSError) as raised:
        build_release(failed.pk)
    assert raised.value.errno == errno.ENOSPC
    failed.refresh_from_db()
    assert failed.status == Release.Status.FAILED and DISK_FULL in failed.error
    assert left_behind(small_disk) == []
    client.force_login(lead)
    assert client.get(reverse("releases", args=[study.pk])).status_code == 200

    filler.unlink()
    again = build_release(create_release(study, lead, "1.0.0").pk)
    assert again.status == Release.Status.DONE
    path = small_disk / again.file_path
    assert path.stat().st_size == again.size
    assert zipfile.ZipFile(path).testzip() is None
    assert left_behind(small_disk) == [again.file_path]
