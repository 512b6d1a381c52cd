"""Pooled training runs: the coordinator queues them, follows them and publishes a succeeded one
as a pipeline (admin)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Path
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator
from sqlalchemy import select
from sqlalchemy.orm import Session

from deidpool.server.database import RunEpoch, TrainingRun
from deidpool.server.deps import SessionDep, StateDep
from deidpool.server.errors import Refused
from deidpool.server.publishing import publish_run
from deidpool.server.routes.routers import admin_router, refusals
from deidpool.server.runs import queue_run
from deidpool.server.views import PipelineView, RunView, pipeline_view, run_view

RunId = Annotated[int, Path(ge=1, le=2**31 - 1, description="Training run id.")]
admin = admin_router("/api/runs")


def _whole(value: object) -> object:
    """3.0 as 3: JSON has one kind of number, and JSON Schema counts 3.0 an integer."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


WholeNumber = Annotated[int, BeforeValidator(_whole)]  # "3" and 3.5 stay refused (strict)
# the bounds before the validator, or pydantic writes them into the schema as "ge"/"le", not "minimum"/"maximum"
RunIdItem = Annotated[int, Field(ge=1, le=2**31 - 1), BeforeValidator(_whole)]


class RunIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    max_epochs: WholeNumber = Field(30, ge=1, le=10_000)
    patience: WholeNumber = Field(5, ge=1, le=10_000)
    seed: WholeNumber = Field(0, ge=0, le=2**31 - 1)
    valid_fraction: float = Field(0.1, gt=0, lt=1, description="Share of each institution's sentences "
                                                               "held out for validation.")
    lstm_units: WholeNumber = Field(128, ge=1, le=1024, description="LSTM units per direction of each of the "
                                                                     "pooled tagger's two layers.")
    # deidpool.representer.training.MONITORS, the default server.pooled.POOLED_MONITOR (a test keeps them the same)
    monitor: Literal["val_f1", "val_tag_f1", "val_loss"] = Field(
        "val_loss", description="What early stopping and the kept epoch go by: the validation loss (the default), "
                                "PHI F1 (found PHI tokens) or exact-tag F1 (their type and B/I too).")


class PublishIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    override_audit: bool = Field(False, description="Publish although the representer has no passing audit.")
    ensemble_with: list[RunIdItem] = Field(
        [], max_length=10, json_schema_extra={"uniqueItems": True},
        description="Other succeeded runs of the same representer (e.g. other seeds): their taggers are published "
                    "with the run's as a seed ensemble.")

    @field_validator("ensemble_with")
    @classmethod
    def _distinct(cls, runs: list[int]) -> list[int]:
        if len(set(runs)) != len(runs):
            raise ValueError("lists a run more than once")
        return runs


def run_epochs(session: Session, run_id: int) -> list[RunEpoch]:
    return list(session.scalars(select(RunEpoch).where(RunEpoch.run_id == run_id).order_by(RunEpoch.epoch)))


@admin.post("", status_code=202, responses=refusals(400, 409, 413, 422, 507))
def start_run(state: StateDep, body: RunIn = RunIn()) -> RunView:
    """Queue a pooled training run over every accepted contribution of the current representer."""
    return run_view(queue_run(state, body.model_dump()), [])


@admin.get("")
def list_runs(session: SessionDep) -> list[RunView]:
    runs = session.scalars(select(TrainingRun).order_by(TrainingRun.id)).all()
    return [run_view(run, run_epochs(session, run.id)) for run in runs]


@admin.get("/{run_id}", responses=refusals(404, 422))
def get_run(run_id: RunId, session: SessionDep) -> RunView:
    run = session.get(TrainingRun, run_id)
    if run is None:
        raise Refused(404, f"no training run {run_id}")
    return run_view(run, run_epochs(session, run_id))


@admin.post("/{run_id}/publish", status_code=201, responses=refusals(400, 404, 409, 413, 422, 507))
def publish(run_id: RunId, state: StateDep, body: PublishIn = PublishIn()) -> PipelineView:
    """Publish a succeeded run (with `ensemble_with`, a seed ensemble of runs) as a server-signed pipeline
    (needs a passing audit, or override_audit)."""
    return pipeline_view(publish_run(state, run_id, body.override_audit, body.ensemble_with))
