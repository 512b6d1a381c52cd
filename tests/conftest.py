"""Shared fixtures: the reference corpora in ../shared/data, skipped cleanly when absent."""

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _require(relative: str) -> Path:
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"reference corpus {path} is absent (it lives in ../shared/data beside the repository)")
    return path


@pytest.fixture(scope="session")
def physionet_dir() -> Path:
    """../shared/data/physionet-deid (id.text, id-phi.phrase, splits.json)."""
    return _require("physionet-deid")


@pytest.fixture(scope="session")
def meddocan_dir() -> Path:
    """../shared/data/meddocan (train/ and dev/, each with brat/ and xml/)."""
    return _require("meddocan")
