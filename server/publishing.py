"""Publication of a succeeded pooled training run: the current representer's bundle and the
run's tagger, signed by the server as a pipeline, stored and recorded. Refused unless the
representer passed a privacy audit ("consistent with chance") or the coordinator overrides."""

from __future__ import annotations

import tempfile
from pathlib import Path

from representer.bundle import TAGGER_FILE, BundleError, open_bundle, publish_pipeline
from server.audits import passed_audit
from server.database import SUCCEEDED, Pipeline, Representer, TrainingRun
from server.errors import Refused
from server.state import ServerState


def publish_run(state: ServerState, run_id: int, override_audit: bool) -> Pipeline:
    with state.sessions() as session:
        run = session.get(TrainingRun, run_id)
        if run is None:
            raise Refused(404, f"no training run {run_id}")
        if run.status != SUCCEEDED:
            raise Refused(409, f"training run {run_id} is {run.status}; only a succeeded run can be published")
        representer = session.get(Representer, run.representer_id)
        if representer is None:
            raise Refused(409, f"the representer {run.representer_id} of run {run_id} is not registered")
        audit = passed_audit(session, representer.id)
    if audit is None and not override_audit:
        raise Refused(409, f"representer {representer.id} has no audit of its export path with verdict "
                           "\"consistent with chance\"; record one (POST /api/audits) or publish with override_audit")
    tagger = state.layout.run_dir(run_id) / "models" / TAGGER_FILE
    if not tagger.is_file():
        raise Refused(409, f"training run {run_id} has no tagger file models/{TAGGER_FILE}")
    training = {"run_id": run_id, "config": run.config, "metrics": run.metrics, "epochs_done": run.epochs_done,
                "best_epoch": run.best_epoch, "contributions": len(run.contributions),
                "audit": {"id": audit.id, "verdict": audit.verdict} if audit else {"override": True}}
    try:
        bundle = open_bundle(state.payloads.path(representer.payload_sha256), state.provider_key)
        with tempfile.TemporaryDirectory(prefix=".publish-", dir=state.layout.payloads) as directory:
            manifest = publish_pipeline(bundle, tagger, state.signing_key, Path(directory) / "pipeline.tar", training)
            sha256 = state.payloads.add_file(Path(directory) / "pipeline.tar")
    except BundleError as error:
        raise Refused(409, f"cannot publish run {run_id}: {error}") from None
    with state.sessions.begin() as session:
        pipeline = Pipeline(run_id=run_id, representer_id=representer.id, payload_sha256=sha256, manifest=manifest,
                            audit_override=audit is None)
        session.add(pipeline)
    return pipeline
