"""The JSON form of the database rows the API returns (never a secret: institutions' public
keys are public, and the admin token is not in the database)."""

from __future__ import annotations

from datetime import datetime

from server.database import Audit, Contribution, Institution, Pipeline, Representer, RunEpoch, TrainingRun


def _time(moment: datetime | None) -> str | None:
    return moment.isoformat(timespec="seconds") if moment else None


def institution_view(row: Institution) -> dict:
    return {"id": row.id, "fingerprint": row.fingerprint, "enabled": row.enabled, "created": _time(row.created),
            "public_key": row.public_key}


def representer_view(row: Representer) -> dict:
    return {"representer_id": row.id, "payload_sha256": row.payload_sha256, "current": row.current,
            "created": _time(row.created), "manifest": row.manifest}


def contribution_view(row: Contribution) -> dict:
    return {"sha256": row.sha256, "institution": row.institution_id, "representer_id": row.representer_id,
            "sentences": row.sentences, "tokens": row.tokens, "dim": row.dim, "dtype": row.dtype,
            "size_bytes": row.size_bytes, "created": _time(row.header_created), "received": _time(row.received),
            "neighbours": row.neighbours, "reidentification_bound": row.reidentification_bound}


def run_view(row: TrainingRun, epochs: list[RunEpoch]) -> dict:
    return {"id": row.id, "representer_id": row.representer_id, "status": row.status, "config": row.config,
            "contributions": len(row.contributions), "epochs_done": row.epochs_done, "best_epoch": row.best_epoch,
            "metrics": row.metrics, "error": row.error, "worker_id": row.worker_id, "heartbeat": _time(row.heartbeat),
            "created": _time(row.created), "started": _time(row.started), "finished": _time(row.finished),
            "epochs": [{"epoch": epoch.epoch, **epoch.metrics} for epoch in epochs]}


def audit_view(row: Audit) -> dict:
    """An audit's verdict and summary: the report's top-level numbers and strings."""
    summary = {key: value for key, value in row.report.items() if isinstance(value, (str, int, float, bool))}
    return {"id": row.id, "representer_id": row.representer_id, "verdict": row.verdict,
            "signer_fingerprint": row.signer_fingerprint, "created": _time(row.created), "summary": summary}


def pipeline_view(row: Pipeline) -> dict:
    return {"id": row.id, "run_id": row.run_id, "representer_id": row.representer_id,
            "payload_sha256": row.payload_sha256, "audit_override": row.audit_override, "created": _time(row.created),
            "manifest": row.manifest, "training": row.manifest.get("pipeline", {}).get("training")}
