"""A whole federation on one machine, step by step, for the programs that run one (`deidpool
demo`, the federation benchmark and its diagnosis): the provider trains its representer and
publishes it as a signed bundle (`train_provider`, `Provider.bundle`; `provider_at` reads one
trained before), each institution makes its keys and exports its notes as a contribution
(`party_keys`, `export_party`), and an in-process pooling server (`pooling_server_key`) trains
the pooled tagger on contributions and publishes it as a pipeline (`train_pooled_round`). Every
step keeps what an earlier run left (keys, the representer's run, the bundle, the pooled tagger's
run, the pipeline), so an interrupted federation resumes.

A provider's folder holds keys/ (provider.key, provider.pub), the representer's run (run/ unless
named) and bundle.tar; an institution's key folder institution.key, .pub and .json. TensorFlow is
imported only by the steps that train or read models."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from deidpool.representer import keys

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

    from deidpool.adversary.runs import AdversarialSettings
    from deidpool.client.export import Exported, ExportSettings
    from deidpool.corpus.document import Document
    from deidpool.representer.bundle import Bundle
    from deidpool.server.pooled import PooledContribution

PROVIDER = "provider"  # the provider's key files: provider.key, provider.pub
INSTITUTION = "institution"  # an institution's key files: institution.key, institution.pub
SERVER_ENCRYPTION = f"server-{keys.ENCRYPTION}"  # the in-process server's key files (beside server-signing)


@dataclasses.dataclass(frozen=True)
class SigningKeys:
    """A signing key pair: `name`.key (private) and `name`.pub in `folder`."""

    folder: Path
    name: str

    @property
    def private_file(self) -> Path:
        return self.folder / f"{self.name}.key"

    @property
    def public_file(self) -> Path:
        return self.folder / f"{self.name}.pub"

    def private(self) -> Ed25519PrivateKey:
        return keys.load_private_key(self.private_file, keys.SIGNING)

    def public(self) -> Ed25519PublicKey:
        return keys.load_public_key(self.public_file, keys.SIGNING)


@dataclasses.dataclass(frozen=True)
class Provider:
    """The provider's trained representer: its run folder, its signing keys and where its bundle
    goes; `metrics`, the run's final metrics where this process trained it (`train_provider`)."""

    run: Path
    keys: SigningKeys
    bundle_path: Path
    metrics: dict = dataclasses.field(default_factory=dict)

    def bundle(self, audit: Path | None = None) -> Bundle:
        """The signed representer bundle: published from the run (with the audit summary in
        `audit`, see `publish_run`) unless it is there already, and opened with the provider's key."""
        from deidpool.representer.bundle import open_bundle, publish_run

        if not self.bundle_path.exists():
            publish_run(self.run, self.keys.private(), self.bundle_path, audit=audit)
        return open_bundle(self.bundle_path, self.keys.public())


def train_provider(train_documents: Sequence[Document], valid_documents: Sequence[Document], folder: Path,
                   settings: AdversarialSettings, *, tags: Sequence[str], embeddings: str = "glove",
                   loaded_embeddings=None, data: dict | None = None, language: str = "en", progress: bool = True,
                   run: str = "run") -> Provider:
    """The provider in `folder`: its keys in keys/ (made unless there) and its representer trained
    by the three-phase procedure in `run` (`train_adversarial_run`, which resumes a run it finds)."""
    from deidpool.adversary.runs import train_adversarial_run

    provider = provider_at(folder, run)
    if not provider.keys.private_file.exists():
        keys.create_provider_keys(provider.keys.folder)
    metrics = train_adversarial_run("three-phase", train_documents, valid_documents, provider.run, settings,
                                    embeddings=embeddings, tags=tags, loaded_embeddings=loaded_embeddings, data=data,
                                    language=language, progress=progress)
    return dataclasses.replace(provider, metrics=metrics)


def provider_at(folder: Path, run: str = "run") -> Provider:
    """The provider whose folder is `folder` and representer run `run`, as `train_provider` lays
    them out, for a program that reads a provider trained before (no metrics)."""
    folder = Path(folder)
    return Provider(folder / run, SigningKeys(folder / "keys", PROVIDER), folder / "bundle.tar")


@dataclasses.dataclass(frozen=True)
class Party:
    """An institution of the federation: its id and its signing keys."""

    institution: str
    keys: SigningKeys

    def contribution(self, path: Path, name: str | None = None) -> PooledContribution:
        """Its contribution at `path` as the in-process server pools it, named `name` (default: the
        institution, for its one contribution) where the real server names it by its SHA-256."""
        from deidpool.server.pooled import PooledContribution

        return PooledContribution(sha256=name or self.institution, path=Path(path), institution=self.institution,
                                  public_key=self.keys.public())


def party_keys(folder: Path, institution: str) -> Party:
    """The institution `institution` with its keys in `folder` (made unless there)."""
    from deidpool.client.identity import create_institution_keys

    signing = SigningKeys(Path(folder), INSTITUTION)
    if not signing.private_file.exists():
        create_institution_keys(signing.folder, institution)
    return Party(institution, signing)


def export_party(notes: Iterable[Document], bundle: Bundle, vectors, path: Path, party: Party,
                 settings: ExportSettings | None = None, *, server_key: X25519PublicKey,
                 progress: bool = True) -> Exported:
    """`party`'s contribution of `notes` at `path` under `settings` (default: `client export`'s),
    encrypted to `server_key` and signed with its key (`export_contribution`); `vectors`: the
    bundle's embeddings."""
    from deidpool.client.export import ExportSettings, export_contribution

    return export_contribution(notes, bundle, vectors, path, settings or ExportSettings(),
                               institution=party.institution, server_key=server_key,
                               signing_key=party.keys.private(), progress=progress)


def pooling_server_key(folder: Path) -> X25519PrivateKey:
    """The in-process pooling server's encryption key, from its keys in `folder` (made unless there)."""
    folder = Path(folder)
    if not (folder / f"{SERVER_ENCRYPTION}.key").exists():
        keys.create_server_keys(folder)
    return keys.load_private_key(folder / f"{SERVER_ENCRYPTION}.key", keys.ENCRYPTION)


@dataclasses.dataclass(frozen=True)
class PooledSettings:
    """How the pooled tagger trains (`train_pooled`); the split holds `valid_fraction` of each
    institution's sentences for validation."""

    max_epochs: int
    patience: int
    lstm_units: int
    monitor: str
    seed: int = 0
    valid_fraction: float = 0.1
    word_dropout: float = 0.0


@dataclasses.dataclass(frozen=True)
class PooledRound:
    """A pooled tagger: its best epoch's metrics, its training sentences, its run and its pipeline."""

    training: dict
    sentences: int
    run_dir: Path
    pipeline: Path


def train_pooled_round(contributions: Sequence[PooledContribution], key: X25519PrivateKey, bundle: Bundle,
                       run_dir: Path, pipeline: Path, *, tags: Sequence[str], signing_key: Ed25519PrivateKey,
                       settings: PooledSettings) -> PooledRound:
    """What the server does in a run, in this process: pool `contributions` (decrypted with
    `key`), train the tagger on them in `run_dir` (resuming it) and publish it with `bundle`'s
    representer as a pipeline at `pipeline`, signed with `signing_key`, unless it is there."""
    from deidpool.representer.bundle import publish_pipeline
    from deidpool.server.pooled import open_pooled_data, train_pooled

    run_dir, pipeline = Path(run_dir), Path(pipeline)
    data = open_pooled_data(contributions, key, representer_id=bundle.representer_id, num_tags=len(tags),
                            valid_fraction=settings.valid_fraction, seed=settings.seed)
    training = train_pooled(data, run_dir, tags=tags, representer_id=bundle.representer_id,
                            contributions=[contribution.sha256 for contribution in contributions],
                            max_epochs=settings.max_epochs, patience=settings.patience, seed=settings.seed,
                            lstm_units=settings.lstm_units, word_dropout=settings.word_dropout,
                            monitor=settings.monitor)
    if not pipeline.exists():
        publish_pipeline(bundle, run_dir / "models" / "tagger.keras", signing_key, pipeline, training)
    return PooledRound(training, len(data.train), run_dir, pipeline)
