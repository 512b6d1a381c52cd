"""Signed model bundles: a representer, plus a tagger for a published pipeline, with a manifest
signed by the provider's Ed25519 key, as a directory or a `.tar` file (DESIGN.md, Artifacts).
Keras is imported only to load or publish models: verifying a bundle needs no ML framework.

A bundle holds `manifest.json`, `manifest.sig` (base64 Ed25519 signature of the manifest's
bytes) and the model files the manifest lists with their SHA-256, nothing else. A pipeline's
tagger is `tagger.keras`, or, for a seed ensemble (`deidpool.representer.ensemble`), its members
`tagger-1.keras`, `tagger-2.keras`, ... The
representer id is derived from the representer file's hash, so a pipeline built on a
representer keeps its id.

A training run directory can be published (`publish_run`) when it holds
`models/representer.keras` (and optionally `models/tagger.keras`, making a pipeline), as
`deidpool.representer.training.run_training` saves them, and a `config.json` with `embeddings` (the
embeddings spec, e.g. "glove") and `tags` (the tag vocabulary, "O" first; `tag_vocabulary`
in `deidpool.representer.tagger_runs`); optional entries are `embeddings_id` (checked), `scheme`
(default "BIO"), `label` (the span attribute the tags name: "source_type", the default,
also written "source", or "type" for i2b2 2014 types) and `neighbours` (N). Its
`metrics.json`, when present, is the training summary.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from deidpool.corpus.casing import CASING
from deidpool.representer.keys import fingerprint

FORMAT_VERSION = 1
MANIFEST, SIGNATURE = "manifest.json", "manifest.sig"
REPRESENTER_FILE, TAGGER_FILE = "representer.keras", "tagger.keras"
ENSEMBLE_MEMBER = re.compile(r"tagger-([1-9][0-9]*)\.keras")  # the taggers of a seed-ensemble pipeline
LABELS = {"source_type": "source_type", "source": "source_type", "type": "type"}  # run config -> `Span` attribute
TAG_KEYS = ("tags", "tag_vocabulary")  # the tag vocabulary in a run's config.json


class BundleError(ValueError):
    """A bundle or run directory that cannot be used; the message says which and why."""


def representer_id(representer_file: bytes) -> str:
    return "rep-" + hashlib.sha256(representer_file).hexdigest()[:16]


@dataclass(frozen=True, eq=False)
class Bundle:
    """A verified bundle: its manifest and the bytes of its model files (loaded from these
    verified bytes, so nothing can change between verification and loading)."""

    path: Path
    manifest: dict
    files: dict[str, bytes]

    @property
    def representer_id(self) -> str:
        return self.manifest["representer_id"]

    @property
    def is_pipeline(self) -> bool:
        return bool(self.tagger_files)

    @property
    def tagger_files(self) -> list[str]:
        """The pipeline's tagger file, or its ensemble's members in order; [] for a representer."""
        return tagger_files(self.files)

    @property
    def tags(self) -> list[str]:
        return self.manifest["tags"]["vocabulary"]

    @property
    def scheme(self) -> str:
        return self.manifest["tags"]["scheme"]

    @property
    def label(self) -> str:
        """The `Span` attribute the tags name (source_type or type)."""
        return self.manifest["tags"]["label"]

    @property
    def repr_size(self) -> int:
        return self.manifest["repr_size"]

    @property
    def reads_chars(self) -> bool:
        """Whether the representer reads each token's characters beside its embedding."""
        return "chars" in self.manifest

    def load_representer(self, deterministic: bool = False):
        """The representer (a Keras model) with its noise on (unless `deterministic`)."""
        from deidpool.representer.representation import load_representer

        return self._load(REPRESENTER_FILE, lambda path: load_representer(path, deterministic))

    def load_tagger(self):
        """The pipeline's `deidpool.representer.tagger.Tagger`, or its
        `deidpool.representer.ensemble.TaggerEnsemble`."""
        if not self.is_pipeline:
            raise BundleError(f"{self.path} is a representer bundle without a tagger, not a pipeline")
        taggers = [self._load(name, _load_tagger) for name in self.tagger_files]
        if len(taggers) == 1:
            return taggers[0]
        from deidpool.representer.ensemble import TaggerEnsemble

        try:
            return TaggerEnsemble(taggers)
        except ValueError as error:
            raise BundleError(f"{self.path}: {error}") from None

    def _load(self, name: str, loader):
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / name
            path.write_bytes(self.files[name])
            return loader(path)

    def load_embeddings(self, spec: str | None = None):
        """The embeddings the representer was trained on, by the manifest's spec or `spec`;
        refused unless their source id (name + matrix hash) is the manifest's."""
        try:
            from deidpool.representer.embeddings import load_embeddings
        except ImportError as error:
            raise BundleError(f"cannot load embeddings: the package {error.name} is missing "
                              f"(pip install {str(error.name).replace('_', '-')})") from None
        expected = self.manifest["embeddings"]
        try:
            embeddings = load_embeddings(spec or expected["spec"])
        except ValueError as error:
            raise BundleError(f"cannot load the embeddings: {error}") from None
        if embeddings.source_id != expected["source_id"]:
            raise BundleError(f"embeddings {spec or expected['spec']!r} are {embeddings.source_id}, but the "
                              f"representer was trained on {expected['source_id']}")
        return embeddings


def tagger_files(names) -> list[str]:
    """Among file `names`: TAGGER_FILE, or the ensemble members by number; [] when neither."""
    if TAGGER_FILE in names:
        return [TAGGER_FILE]
    members = {int(found.group(1)): name for name in names if (found := ENSEMBLE_MEMBER.fullmatch(name))}
    return [members[number] for number in sorted(members)]


def _ensemble_names(count: int) -> list[str]:
    """The file names of a seed ensemble's `count` taggers, numbered from 1 (`ENSEMBLE_MEMBER`)."""
    return [f"tagger-{number}.keras" for number in range(1, count + 1)]


def write_bundle(out: str | Path, signing_key: Ed25519PrivateKey, files: dict[str, bytes], metadata: dict) -> dict:
    """Write a signed bundle of `files` (REPRESENTER_FILE, optionally the taggers) to `out`, a
    new directory, or a `.tar` file when `out` ends so. `metadata` holds the manifest's
    descriptive entries; the version, id, creation time and hashes are added. Returns the
    manifest. The bundle appears only once complete."""
    out = Path(out)
    if out.exists():
        raise BundleError(f"{out} already exists; refusing to overwrite it")
    manifest = {"format_version": FORMAT_VERSION, "kind": "pipeline" if tagger_files(files) else "representer",
                "representer_id": representer_id(files[REPRESENTER_FILE]),
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "signed_by": fingerprint(signing_key.public_key()), **metadata,
                "files": {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())}}
    manifest_bytes = json.dumps(manifest, indent=2).encode() + b"\n"
    signature = base64.b64encode(signing_key.sign(manifest_bytes)) + b"\n"
    entries = {MANIFEST: manifest_bytes, SIGNATURE: signature, **files}
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        target = staging / out.name
        if out.suffix == ".tar":
            _write_tar(target, entries)
        else:
            _write_directory(target, entries)
        os.rename(target, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return manifest


def _write_directory(path: Path, entries: dict[str, bytes]) -> None:
    path.mkdir()
    for name, data in entries.items():
        (path / name).write_bytes(data)


def _write_tar(path: Path, entries: dict[str, bytes]) -> None:
    with tarfile.open(path, "w") as tar:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))


def open_bundle(path: str | Path, provider_key: Ed25519PublicKey) -> Bundle:
    """The bundle at `path` (directory or .tar), after checking the manifest's signature with
    the pinned `provider_key`, then the SHA-256 of every file; BundleError on any failure."""
    path = Path(path)
    entries = _read_entries(path)
    for name in (MANIFEST, SIGNATURE):
        if name not in entries:
            raise BundleError(f"{path} is not a bundle: it has no {name}")
    manifest_bytes = entries.pop(MANIFEST)
    try:
        provider_key.verify(base64.b64decode(entries.pop(SIGNATURE).strip(), validate=True), manifest_bytes)
    except (InvalidSignature, ValueError):
        raise BundleError(f"{path}: the manifest signature does not verify with the provider key "
                          f"{fingerprint(provider_key)}; the bundle was altered or signed by another key") from None
    manifest = json.loads(manifest_bytes)
    if manifest.get("format_version") != FORMAT_VERSION:
        raise BundleError(f"{path}: bundle format version {manifest.get('format_version')} is not supported "
                          f"(this is version {FORMAT_VERSION})")
    listed = manifest["files"]
    for name in sorted(entries.keys() | listed.keys()):
        if name not in listed:
            raise BundleError(f"{path}: unexpected file {name} (not in the manifest)")
        if name not in entries:
            raise BundleError(f"{path}: {name} is missing")
        if hashlib.sha256(entries[name]).hexdigest() != listed[name]:
            raise BundleError(f"{path}: {name} does not match its SHA-256 in the manifest; the file was altered")
    if REPRESENTER_FILE not in entries or manifest["representer_id"] != representer_id(entries[REPRESENTER_FILE]):
        raise BundleError(f"{path}: the representer id does not match the representer file")
    members = tagger_files(entries)
    if members and members != [TAGGER_FILE] and members != _ensemble_names(len(members)):
        raise BundleError(f"{path}: the ensemble's tagger files are not numbered 1 to {len(members)} ({members})")
    return Bundle(path, manifest, entries)


def _read_entries(path: Path) -> dict[str, bytes]:
    """Name -> bytes of the files of a bundle directory or tar; anything but plain files is refused."""
    if path.is_dir():
        entries = {}
        for item in path.iterdir():
            if not item.is_file() or item.is_symlink():
                raise BundleError(f"{path}: unexpected entry {item.name} (a bundle holds plain files only)")
            entries[item.name] = item.read_bytes()
        return entries
    if not path.is_file():
        raise BundleError(f"{path}: no such bundle (a directory or .tar file)")
    try:
        with tarfile.open(path, "r:") as tar:
            members = tar.getmembers()
            for member in members:
                if not member.isfile() or "/" in member.name or member.name in (".", ".."):
                    raise BundleError(f"{path}: unexpected entry {member.name} (a bundle holds plain files only)")
            return {member.name: tar.extractfile(member).read() for member in members}
    except tarfile.TarError as error:
        raise BundleError(f"{path} is not a bundle directory or a readable .tar file ({error})") from None


def publish_run(run_dir: str | Path, signing_key: Ed25519PrivateKey, out: str | Path,
                audit: str | Path | None = None) -> dict:
    """Publish a training run (see the module docstring) as a bundle at `out`, with the audit
    summary from `audit` (a JSON file, or a run directory with metrics.json). Returns the manifest."""
    from deidpool.representer.characters import CHAR_WIDTH
    from deidpool.representer.embeddings import load_embeddings
    from deidpool.representer.representation import load_representer, reads_chars

    run_dir = Path(run_dir)
    config = _read_json(run_dir / "config.json")
    tags = next((config[key] for key in TAG_KEYS if key in config), None)
    if "embeddings" not in config or tags is None:
        raise BundleError(f"{run_dir / 'config.json'} lacks the embeddings spec ('embeddings') or the tag "
                          f"vocabulary ('{TAG_KEYS[0]}')")
    label = config.get("label", "source_type")
    if label not in LABELS:
        raise BundleError(f"{run_dir / 'config.json'}: label {label!r} is not one of {', '.join(LABELS)}")
    files = {name: _read_model(run_dir / "models" / name) for name in (REPRESENTER_FILE, TAGGER_FILE)
             if name == REPRESENTER_FILE or (run_dir / "models" / name).exists()}
    representer = load_representer(run_dir / "models" / REPRESENTER_FILE)
    if TAGGER_FILE in files:
        tagger = _load_tagger(run_dir / "models" / TAGGER_FILE)
        if tagger.num_tags != len(tags):
            raise BundleError(f"{run_dir}: the tagger has {tagger.num_tags} tags, config.json lists {len(tags)}")
    try:
        embeddings = load_embeddings(config["embeddings"])
    except ValueError as error:
        raise BundleError(f"{run_dir / 'config.json'}: {error}") from None
    embedding_dim = int(representer.input["embeddings"].shape[-1])
    if embeddings.dim != embedding_dim:
        raise BundleError(f"{run_dir}: the representer reads {embedding_dim}-dimensional embeddings, "
                          f"{config['embeddings']} has {embeddings.dim}")
    if config.get("embeddings_id", embeddings.source_id) != embeddings.source_id:
        raise BundleError(f"{run_dir}: embeddings {config['embeddings']} are now {embeddings.source_id}, but the "
                          f"run was trained on {config['embeddings_id']}")
    training = _read_json(run_dir / "metrics.json") if (run_dir / "metrics.json").exists() else {}
    if audit is not None:
        audit = Path(audit)
        audit = _read_json(audit / "metrics.json" if audit.is_dir() else audit)
    metadata = {
        "embeddings": {"spec": config["embeddings"], "source_id": embeddings.source_id},
        "embedding_dim": embedding_dim,
        "repr_size": int(representer.output.shape[-1]),
        "tags": {"scheme": config.get("scheme", "BIO"), "label": LABELS[label], "vocabulary": list(tags)},
        "casing": {"feature": "reimers-gurevych-2017", "classes": list(CASING)},
        **({"chars": {"width": CHAR_WIDTH}} if reads_chars(representer) else {}),
        "neighbours": config.get("neighbours"),
        "training": {"procedure": config.get("procedure"), "metrics": training},
        "audit": audit,
    }
    return write_bundle(out, signing_key, files, metadata)


def publish_pipeline(bundle: Bundle, tagger_file: str | Path | Sequence[str | Path], signing_key: Ed25519PrivateKey,
                     out: str | Path, training: dict) -> dict:
    """Publish `bundle`'s representer with a tagger trained on its representations (the
    pooled tagger), or with several as a seed ensemble, as a pipeline; `training` summarises
    the taggers' training."""
    paths = [tagger_file] if isinstance(tagger_file, (str, Path)) else list(tagger_file)
    if not paths:
        raise BundleError("a pipeline needs at least one tagger file")
    names = [TAGGER_FILE] if len(paths) == 1 else _ensemble_names(len(paths))
    taggers = {name: _read_model(Path(path)) for name, path in zip(names, paths)}
    metadata = {key: value for key, value in bundle.manifest.items()
                if key not in ("format_version", "kind", "representer_id", "created", "signed_by", "files")}
    return write_bundle(out, signing_key, {REPRESENTER_FILE: bundle.files[REPRESENTER_FILE], **taggers},
                        {**metadata, "pipeline": {"training": training, "taggers": len(paths)}})


def _load_tagger(path: Path):
    import keras

    from deidpool.representer.tagger import Tagger

    tagger = keras.saving.load_model(path, compile=False)
    if not isinstance(tagger, Tagger):
        raise BundleError(f"{path} is not a deidpool tagger")
    return tagger


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except OSError as error:
        raise BundleError(f"cannot read {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise BundleError(f"{path} is not valid JSON: {error}") from None


def _read_model(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise BundleError(f"cannot read the model file {path}: {error.strerror}") from None
