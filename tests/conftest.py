"""Shared fixtures: the reference corpora in ../shared/data, skipped cleanly when absent; keys
(provider, institution "site-a", server) and a tiny untrained pipeline (representer + tagger)
published as a signed bundle, built once per session."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from deidpool.client.identity import create_institution_keys
from deidpool.corpus.categories import PHI_TYPES
from deidpool.corpus.synth import generate_documents
from deidpool.corpus.tagging import tag_vocabulary
from deidpool.representer import keys

EMBEDDING_DIM, REPR_SIZE, UNITS = 8, 6, 4
TAGS = tag_vocabulary({phi.type for phi in PHI_TYPES.values()})
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _require(relative: str) -> Path:
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"reference corpus {path} is absent (it lives in ../shared/data beside the repository)")
    return path


@pytest.fixture(scope="session", autouse=True)
def neighbour_cache(tmp_path_factory) -> Path:
    """Neighbour tables (the re-identification bound's) go to a temporary folder, not ~/.cache."""
    folder = tmp_path_factory.mktemp("neighbour-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DEIDPOOL_CACHE", str(folder))
        yield folder


@pytest.fixture(scope="session")
def physionet_dir() -> Path:
    """../shared/data/physionet-deid (id.text, id-phi.phrase, splits.json)."""
    return _require("physionet-deid")


@pytest.fixture(scope="session")
def meddocan_dir() -> Path:
    """../shared/data/meddocan (train/ and dev/, each with brat/ and xml/)."""
    return _require("meddocan")


@pytest.fixture(scope="session")
def workspace(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("bundles")


@pytest.fixture(scope="session")
def key_files(workspace):
    """Paths of every key: provider, institution "site-a" and the server's encryption key."""
    folder = workspace / "keys"
    provider = keys.create_provider_keys(folder)
    institution = create_institution_keys(folder, "site-a")
    server = keys.create_server_keys(folder)[keys.ENCRYPTION]
    return SimpleNamespace(provider=provider, institution=institution, server=server)


@pytest.fixture(scope="session")
def documents():
    return list(generate_documents(12, seed=3))


@pytest.fixture(scope="session")
def pipeline_path(workspace, documents, key_files) -> Path:
    """A training run (workspace/run) with a tiny representer and tagger (untrained), published
    as a .tar."""
    from deidpool.representer.tiny import publish_tiny_pipeline

    words = sorted({word.lower() for document in documents for word in document.text.split() if word.isalpha()})
    signing_key = keys.load_private_key(key_files.provider.private, keys.SIGNING)
    return publish_tiny_pipeline(workspace, signing_key, words, TAGS, embedding_dim=EMBEDDING_DIM,
                                 repr_size=REPR_SIZE, units=UNITS)


@pytest.fixture(scope="session")
def chromium():
    """render(url, screenshot) -> the DOM after headless Chromium loaded `url` (the Debian
    package `chromium`, which .ci/run installs), with a PNG screenshot written to `screenshot`."""
    import shutil
    import subprocess

    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("headless Chromium is not installed (Debian package `chromium`; .ci/run installs it)")

    def render(url: str, screenshot: Path) -> str:
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        flags = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                 "--window-size=1280,2000", f"--user-data-dir={screenshot.parent / '.chromium-profile'}"]
        subprocess.run([*flags, f"--screenshot={screenshot}", url], check=True, capture_output=True, timeout=120)
        return subprocess.run([*flags, "--dump-dom", url], check=True, capture_output=True, text=True,
                              timeout=120).stdout

    return render
