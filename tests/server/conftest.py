"""Fixtures of the server tests.

Pooled training: `pool`, with institution and server keys, synthetic sentences (the first
vector component of every token is its sentence's number) and a writer of contributions.

API: a server data directory on SQLite (and on PostgreSQL when $DEIDPOOL_TEST_POSTGRES_URL is
set), its app in a TestClient, a registered institution and representer, and helpers that
write contributions, upload them and snapshot everything stored."""

import hashlib
import os
import uuid
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, func, select, text

from deidpool.client.identity import create_institution_keys
from deidpool.contribution.container import CONTENT_TYPE, write_contribution
from deidpool.contribution.records import encode_sentence
from deidpool.contribution.signed_requests import INSTITUTION_HEADER, signed_headers
from deidpool.representer import keys
from deidpool.server.app import create_app
from deidpool.server.database import Base, make_engine
from deidpool.server.initialize import init_data_dir
from deidpool.server.settings import Layout, Settings, normalized_url

from ..conftest import REPR_SIZE
from ..conftest import TAGS as BUNDLE_TAGS

DIM, REPRESENTER = 6, "rep-test"
TAGS = ["O", "B-NAME", "I-NAME"]


def synthetic_sentences(first: int, count: int, seed: int = 0) -> list[tuple]:
    """`count` (vectors, tags, casing) sentences numbered from `first`; a token is PHI
    ("B-NAME") when its second vector component is positive."""
    rng = np.random.default_rng([seed, first])
    sentences = []
    for number, length in enumerate(rng.integers(2, 12, size=count), first):
        vectors = rng.normal(size=(length, DIM))
        vectors[:, 0] = number
        sentences.append((vectors, (vectors[:, 1] > 0).astype(int), rng.integers(0, 5, length)))
    return sentences


@pytest.fixture(scope="session")
def pool(key_files, tmp_path_factory):
    """The shared server key and institution site-a (tests/conftest.py `key_files`) and a second
    institution, site-b; `pool.write(path, institution, sentences, representer_id=REPRESENTER)`
    writes a contribution and returns its header."""
    site_b = create_institution_keys(tmp_path_factory.mktemp("site-b"), "site-b")
    institution_keys = {name: keys.load_private_key(pair.private, keys.SIGNING)
                        for name, pair in (("site-a", key_files.institution), ("site-b", site_b))}
    server_key = keys.load_private_key(key_files.server.private, keys.ENCRYPTION)

    def write(path, institution, sentences, representer_id=REPRESENTER, draws=1):
        records = [encode_sentence(*sentence) for sentence in sentences]
        return write_contribution(path, records, institution=institution, representer_id=representer_id, dim=DIM,
                                  neighbours=100, pseudonymization="groups", draws=draws,
                                  signing_key=institution_keys[institution], server_key=server_key.public_key())

    return SimpleNamespace(dim=DIM, representer=REPRESENTER, tags=TAGS, server_key=server_key,
                           institution_keys=institution_keys, sentences=synthetic_sentences, write=write)


POSTGRES_ENV = "DEIDPOOL_TEST_POSTGRES_URL"


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, monkeypatch):
    """Where the server's database lives: its SQLite file, or a fresh schema of the PostgreSQL
    database at $DEIDPOOL_TEST_POSTGRES_URL (dropped afterwards)."""
    monkeypatch.delenv("DATABASE_URL", raising=False)
    if request.param == "sqlite":
        yield "sqlite"
        return
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.skip(f"PostgreSQL storage tests need ${POSTGRES_ENV} (e.g. postgresql://user@127.0.0.1:5433/postgres)")
    schema = f"test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(normalized_url(url), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"CREATE SCHEMA {schema}"))
    separator = "&" if "?" in url else "?"
    monkeypatch.setenv("DATABASE_URL", f"{url}{separator}options=-csearch_path%3D{schema}")
    yield "postgresql"
    with admin.connect() as connection:
        connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
    admin.dispose()


@pytest.fixture
def server_dir(tmp_path, database, key_files) -> SimpleNamespace:
    """An initialized data directory: `.path`, `.layout` and the admin `.token`."""
    path = tmp_path / "server"
    token = init_data_dir(path, key_files.provider.public)
    return SimpleNamespace(path=path, layout=Layout(path), token=token)


def set_limits(server_dir, **limits) -> None:
    layout = server_dir.layout
    Settings.load(layout).model_copy(update=limits).save(layout)


@pytest.fixture
def api(server_dir):
    with TestClient(create_app(server_dir.path)) as client:
        yield client


@pytest.fixture
def admin(server_dir) -> dict:
    return {"Authorization": f"Bearer {server_dir.token}"}


@pytest.fixture
def site(api, admin, key_files, pipeline_path) -> SimpleNamespace:
    """Institution site-a registered, the tiny pipeline's representer current: `.representer`
    id, the institution's signing `.key`, the server's encryption `.server_key`."""
    reply = api.post("/api/institutions", headers=admin,
                     json={"id": "site-a", "public_key": key_files.institution.public.read_text()})
    assert reply.status_code == 201, reply.text
    reply = api.post("/api/representers", headers=admin, content=pipeline_path.read_bytes())
    assert reply.status_code == 201, reply.text
    state = api.app.state.server
    return SimpleNamespace(representer=reply.json()["representer_id"],
                           key=keys.load_private_key(key_files.institution.private, keys.SIGNING),
                           server_key=keys.load_public_key(state.layout.encryption_public_key, keys.ENCRYPTION))


def contribution_file(path: Path, site, *, institution: str = "site-a", representer_id: str | None = None,
                      dim: int = REPR_SIZE, sentences: int = 8, seed: int = 0, signing_key=None,
                      num_tags: int = len(BUNDLE_TAGS), neighbours: int = 100, bound: dict | None = None,
                      pseudonymization: str = "groups", draws: int = 1, safety_net: dict | None = None) -> Path:
    """A contribution of `sentences` random sentences for `site`'s server; returns `path`. As an
    export does, `safety_net`'s finders go to the header, its counts and `bound` to the sealed summary."""
    rng = np.random.default_rng(seed)
    records = [encode_sentence(rng.normal(size=(length, dim)), rng.integers(0, num_tags, length),
                               rng.integers(0, 5, length)) for length in rng.integers(1, 12, sentences)]
    counts = dict(safety_net or {})
    finders = {"finders": counts.pop("finders")} if "finders" in counts else {}
    write_contribution(path, records, institution=institution, representer_id=representer_id or site.representer,
                       dim=dim, neighbours=neighbours, pseudonymization=pseudonymization, draws=draws,
                       safety_net=finders, summary={"reidentification_bound": bound or {}, "safety_net": counts},
                       signing_key=signing_key or site.key, server_key=site.server_key)
    return path


def upload(api, body: bytes, key, *, institution: str | None = "site-a", sha256: str | None = None):
    """POST `body` to /api/contributions in a request signed by `institution` (None: the header
    left out) with `key`, declaring `sha256` (default: the body's)."""
    headers = signed_headers(key, institution or "", "POST", "/api/contributions",
                             content_sha256=sha256 or hashlib.sha256(body).hexdigest(), host="testserver")
    if institution is None:
        del headers[INSTITUTION_HEADER]
    return api.post("/api/contributions", content=body, headers={"Content-Type": CONTENT_TYPE, **headers})


def stored(server_dir) -> tuple[dict, list[str]]:
    """Row counts of every table but the replay memory of signed requests (request_nonces, which
    every authentic request adds to, refused uploads too) and every file under payloads/
    (temporary ones included)."""
    engine = make_engine(server_dir.layout.database_url)
    with engine.connect() as connection:
        counts = {table.name: connection.scalar(select(func.count()).select_from(table))
                  for table in Base.metadata.sorted_tables if table.name != "request_nonces"}
    engine.dispose()
    files = sorted(str(path.relative_to(server_dir.layout.payloads)) for path in server_dir.layout.payloads.rglob("*")
                   if path.is_file())
    return counts, files
