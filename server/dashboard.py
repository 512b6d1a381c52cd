"""The HTML dashboard at `/`: institutions, contribution counts, training runs with their
curves, published pipelines and audit verdicts, read from the database and rendered with the
Jinja2 template `server/templates/dashboard.html` (autoescaped; no script, no resource from
outside the page). Its route (server/routes/dashboard.py) needs the read-only viewer token or
the admin token, which a browser sends by HTTP Basic authentication (the token as the password
of its login prompt).

Contributions appear only as counts per institution and representer; runs without their
error messages or worker ids (the viewer token may be given to more people than the admin's)."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from jinja2 import Environment, PackageLoader, StrictUndefined
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from deidpool.server import charts
from deidpool.server.database import Audit, Contribution, Institution, Pipeline, Representer, RunEpoch, TrainingRun

RUNS_SHOWN = 20
_templates = Environment(loader=PackageLoader("deidpool.server"), autoescape=True, undefined=StrictUndefined,
                         trim_blocks=True, lstrip_blocks=True)


def render_dashboard(session: Session) -> str:
    context = {"institutions": _institutions(session), "contributions": _contributions(session),
               "representer": session.scalars(select(Representer.id).where(Representer.current)).first(),
               "runs": _runs(session), "runs_shown": RUNS_SHOWN, "pipelines": _pipelines(session),
               "audits": _audits(session)}
    return _templates.get_template("dashboard.html").render(chart=charts, time=_time, **context)


def _time(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else ""


def _institutions(session: Session) -> list[dict]:
    counts = dict(session.execute(select(Contribution.institution_id, func.count())
                                  .group_by(Contribution.institution_id)).all())
    return [{"id": row.id, "fingerprint": row.fingerprint, "enabled": row.enabled, "created": row.created,
             "contributions": counts.get(row.id, 0)}
            for row in session.scalars(select(Institution).order_by(Institution.id))]


def _contributions(session: Session) -> list[dict]:
    """Per institution and representer: files, sentences, tokens, bytes, the least
    pseudonymization N and the highest re-identification bounds (frequency and empirical prior)
    of its files, and how many of them ran no safety net or are in quarantine."""
    rows = session.execute(
        select(Contribution.institution_id, Contribution.representer_id, func.count(),
               func.sum(Contribution.sentences), func.sum(Contribution.tokens), func.sum(Contribution.size_bytes),
               func.min(Contribution.neighbours), func.max(Contribution.bound_frequency),
               func.max(Contribution.bound_empirical))
        .group_by(Contribution.institution_id, Contribution.representer_id)
        .order_by(Contribution.institution_id, Contribution.representer_id)).all()
    unguarded, quarantined = Counter(), Counter()
    for institution, representer, safety_net, held in session.execute(select(
            Contribution.institution_id, Contribution.representer_id, Contribution.safety_net,
            Contribution.quarantined)):
        unguarded[institution, representer] += not (safety_net or {}).get("finders")
        quarantined[institution, representer] += held
    return [{"institution": institution, "representer": representer, "files": files, "sentences": int(sentences),
             "tokens": int(tokens), "bytes": int(size), "neighbours": neighbours, "bound_frequency": frequency,
             "bound_empirical": empirical, "without_safety_net": unguarded[institution, representer],
             "quarantined": quarantined[institution, representer]}
            for institution, representer, files, sentences, tokens, size, neighbours, frequency, empirical in rows]


def _runs(session: Session) -> list[dict]:
    """The latest RUNS_SHOWN runs, newest first, with their curves."""
    runs = session.scalars(select(TrainingRun).order_by(TrainingRun.id.desc()).limit(RUNS_SHOWN)).all()
    epochs: dict[int, list[dict]] = {run.id: [] for run in runs}
    for epoch in session.scalars(select(RunEpoch).where(RunEpoch.run_id.in_(epochs)).order_by(RunEpoch.epoch)):
        epochs[epoch.run_id].append({**epoch.metrics, "epoch": epoch.epoch})
    return [{"id": run.id, "status": run.status, "representer": run.representer_id,
             "contributions": len(run.contributions), "epochs_done": run.epochs_done,
             "max_epochs": run.config.get("max_epochs"), "best_epoch": run.best_epoch,
             "best": _best(run.metrics), "created": run.created, "finished": run.finished,
             "panels": charts.training_curves(epochs[run.id])} for run in runs]


def _best(metrics: dict | None) -> dict:
    """The run's final validation loss and PHI F1, where recorded as numbers."""
    metrics = metrics or {}
    return {name: metrics[name] for name in ("val_loss", "val_f1")
            if isinstance(metrics.get(name), (int, float)) and not isinstance(metrics.get(name), bool)}


def _pipelines(session: Session) -> list[Pipeline]:
    return list(session.scalars(select(Pipeline).order_by(Pipeline.id.desc())))


def _audits(session: Session) -> list[Audit]:
    return list(session.scalars(select(Audit).order_by(Audit.id.desc())))
