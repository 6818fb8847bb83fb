"""The package's ``__version__`` is the installed distribution's (pyproject.toml) and the changelog's newest."""

import importlib.metadata
import re
from pathlib import Path

import xfft

ROOT = Path(__file__).resolve().parents[2]


def test_version_matches_pyproject_and_changelog():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1) == xfft.__version__
    newest = re.search(r"^## \[(\d+\.\d+\.\d+)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert newest and newest.group(1) == xfft.__version__
    try:
        installed = importlib.metadata.version("xfft")
    except importlib.metadata.PackageNotFoundError:  # a source tree on PYTHONPATH: nothing installed to compare
        installed = xfft.__version__
    assert installed == xfft.__version__
