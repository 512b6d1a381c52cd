"""Publication of a succeeded pooled training run: the current representer's bundle and the
run's tagger (or a seed ensemble of several runs' taggers), signed by the server as a pipeline,
stored and recorded. Refused unless the representer passed a privacy audit ("consistent with
chance") or the coordinator overrides."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy.orm import Session

from deidpool.representer.bundle import TAGGER_FILE, BundleError, open_bundle, publish_pipeline
from deidpool.server.audits import passed_audit
from deidpool.server.database import SUCCEEDED, Pipeline, Representer, TrainingRun
from deidpool.server.errors import Refused
from deidpool.server.state import ServerState


def _succeeded_run(session: Session, run_id: int) -> TrainingRun:
    run = session.get(TrainingRun, run_id)
    if run is None:
        raise Refused(404, f"no training run {run_id}")
    if run.status != SUCCEEDED:
        raise Refused(409, f"training run {run_id} is {run.status}; only a succeeded run can be published")
    return run


def _summary(run: TrainingRun) -> dict:
    return {"run_id": run.id, "config": run.config, "metrics": run.metrics, "epochs_done": run.epochs_done,
            "best_epoch": run.best_epoch, "contributions": len(run.contributions)}


def publish_run(state: ServerState, run_id: int, override_audit: bool, ensemble_with: Sequence[int] = ()) -> Pipeline:
    """Publish run `run_id`'s tagger, or with `ensemble_with` (other succeeded runs of the same
    representer, hence the same tag vocabulary) the seed ensemble of their taggers."""
    with state.sessions() as session:
        run = _succeeded_run(session, run_id)
        if run_id in ensemble_with:
            raise Refused(422, f"ensemble_with lists run {run_id} itself")
        members = [_succeeded_run(session, member) for member in ensemble_with]
        for member in members:
            if member.representer_id != run.representer_id:
                raise Refused(409, f"training run {member.id} used representer {member.representer_id}, "
                                   f"not {run.representer_id} as run {run_id} did")
        representer = session.get(Representer, run.representer_id)
        if representer is None:
            raise Refused(409, f"the representer {run.representer_id} of run {run_id} is not registered")
        audit = passed_audit(session, representer.id)
    if audit is None and not override_audit:
        raise Refused(409, f"representer {representer.id} has no audit of its export path with verdict "
                           "\"consistent with chance\"; record one (POST /api/audits) or publish with override_audit")
    runs = (run, *members)
    taggers = [state.layout.run_dir(one.id) / "models" / TAGGER_FILE for one in runs]
    for one, tagger in zip(runs, taggers):
        if not tagger.is_file():
            raise Refused(409, f"training run {one.id} has no tagger file models/{TAGGER_FILE}")
    training = {**_summary(run), "audit": {"id": audit.id, "verdict": audit.verdict} if audit else {"override": True}}
    if members:
        training["ensemble"] = [_summary(one) for one in runs]
    try:
        bundle = open_bundle(state.payloads.path(representer.payload_sha256), state.provider_key)
        with tempfile.TemporaryDirectory(prefix=".publish-", dir=state.layout.payloads) as directory:
            manifest = publish_pipeline(bundle, taggers, state.signing_key, Path(directory) / "pipeline.tar", training)
            sha256 = state.payloads.add_file(Path(directory) / "pipeline.tar")
    except BundleError as error:
        raise Refused(409, f"cannot publish run {run_id}: {error}") from None
    with state.sessions.begin() as session:
        pipeline = Pipeline(run_id=run_id, representer_id=representer.id, payload_sha256=sha256, manifest=manifest,
                            audit_override=audit is None)
        session.add(pipeline)
    return pipeline
