"""The JSON the API answers: a response model per kind of answer (its schema in the OpenAPI
document) and the converters from database rows. Never a secret: institutions' public keys are
public, and the admin token is not in the database."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from deidpool.server.database import Audit, Contribution, Institution, Pipeline, Representer, RunEpoch, TrainingRun

Time = str  # ISO 8601, to the second, in UTC ("2025-01-31T12:00:00+00:00")


def _time(moment: datetime | None) -> Time | None:
    return moment.isoformat(timespec="seconds") if moment else None


class Health(BaseModel):
    status: str = Field(description='"ok" while the server answers.')


class Fingerprints(BaseModel):
    encryption: str
    signing: str
    provider: str = Field(description="Of the pinned provider key that signs representer bundles.")


class ServerKeys(BaseModel):
    encryption_public_key: str = Field(description="X25519, PEM: contributions are encrypted to it.")
    signing_public_key: str = Field(description="Ed25519, PEM: published pipelines are signed by it.")
    fingerprints: Fingerprints


class InstitutionView(BaseModel):
    id: str
    fingerprint: str
    enabled: bool
    created: Time
    public_key: str = Field(description="Ed25519, PEM.")


class RepresenterView(BaseModel):
    representer_id: str
    payload_sha256: str
    current: bool
    created: Time
    manifest: dict[str, Any]


class ContributionView(BaseModel):
    sha256: str
    institution: str
    representer_id: str
    sentences: int
    tokens: int
    dim: int
    dtype: str
    size_bytes: int
    created: Time = Field(description="When the institution exported it (its signed header).")
    received: Time
    neighbours: int = Field(description="The pseudonymization N of its signed header.")
    draws: int = Field(description="How many draws of every sentence it holds (its signed header).")
    reidentification_bound: dict[str, Any] | None = Field(description="The re-identification bound of its export "
                                                                      "(its sealed summary's, which the server "
                                                                      "decrypted).")
    quarantined: bool = Field(description="Held out of training runs by the coordinator.")
    safety_net: dict[str, Any] | None = Field(description="What the export's safety net for unlabeled PHI ran (its "
                                                          "signed header's finders) and flagged (its sealed "
                                                          "summary's counts); {}: it did not run.")


class EpochView(BaseModel):
    """An epoch of a training run: its number and the metrics the worker recorded."""

    model_config = ConfigDict(extra="allow")
    epoch: int


class RunView(BaseModel):
    id: int
    representer_id: str
    status: str = Field(description="queued, running, succeeded or failed.")
    config: dict[str, Any]
    contributions: int
    epochs_done: int
    best_epoch: int | None
    metrics: dict[str, Any] | None
    error: str | None
    worker_id: str | None
    heartbeat: Time | None
    created: Time
    started: Time | None
    finished: Time | None
    epochs: list[EpochView]


class AuditView(BaseModel):
    id: int
    representer_id: str
    verdict: str
    signer_fingerprint: str
    created: Time
    summary: dict[str, str | int | float | bool] = Field(description="The report's top-level strings and numbers.")


class PipelineView(BaseModel):
    id: int
    run_id: int
    representer_id: str
    payload_sha256: str
    audit_override: bool
    created: Time
    manifest: dict[str, Any]
    training: dict[str, Any] | None


class LatestPipelineView(PipelineView):
    epochs: list[EpochView]


def institution_view(row: Institution) -> InstitutionView:
    return InstitutionView(id=row.id, fingerprint=row.fingerprint, enabled=row.enabled, created=_time(row.created),
                           public_key=row.public_key)


def representer_view(row: Representer) -> RepresenterView:
    return RepresenterView(representer_id=row.id, payload_sha256=row.payload_sha256, current=row.current,
                           created=_time(row.created), manifest=row.manifest)


def contribution_view(row: Contribution) -> ContributionView:
    return ContributionView(sha256=row.sha256, institution=row.institution_id, representer_id=row.representer_id,
                            sentences=row.sentences, tokens=row.tokens, dim=row.dim, dtype=row.dtype,
                            size_bytes=row.size_bytes, created=_time(row.header_created),
                            received=_time(row.received), neighbours=row.neighbours, draws=row.draws,
                            reidentification_bound=row.reidentification_bound, quarantined=row.quarantined,
                            safety_net=row.safety_net)


def epoch_views(epochs: list[RunEpoch]) -> list[EpochView]:
    return [EpochView(**{"epoch": epoch.epoch, **epoch.metrics}) for epoch in epochs]


def run_view(row: TrainingRun, epochs: list[RunEpoch]) -> RunView:
    return RunView(id=row.id, representer_id=row.representer_id, status=row.status, config=row.config,
                   contributions=len(row.contributions), epochs_done=row.epochs_done, best_epoch=row.best_epoch,
                   metrics=row.metrics, error=row.error, worker_id=row.worker_id, heartbeat=_time(row.heartbeat),
                   created=_time(row.created), started=_time(row.started), finished=_time(row.finished),
                   epochs=epoch_views(epochs))


def audit_view(row: Audit) -> AuditView:
    """An audit's verdict and summary: the report's top-level numbers and strings."""
    summary = {key: value for key, value in row.report.items() if isinstance(value, (str, int, float, bool))}
    return AuditView(id=row.id, representer_id=row.representer_id, verdict=row.verdict,
                     signer_fingerprint=row.signer_fingerprint, created=_time(row.created), summary=summary)


def pipeline_view(row: Pipeline) -> PipelineView:
    return PipelineView(**_pipeline_fields(row))


def latest_pipeline_view(row: Pipeline, epochs: list[RunEpoch]) -> LatestPipelineView:
    return LatestPipelineView(**_pipeline_fields(row), epochs=epoch_views(epochs))


def _pipeline_fields(row: Pipeline) -> dict:
    return {"id": row.id, "run_id": row.run_id, "representer_id": row.representer_id,
            "payload_sha256": row.payload_sha256, "audit_override": row.audit_override, "created": _time(row.created),
            "manifest": row.manifest, "training": row.manifest.get("pipeline", {}).get("training")}
