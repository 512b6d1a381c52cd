"""`deidpool demo`: every role of a federated de-id run on this machine, with real components
and real network calls on loopback.

The provider trains a representer by the three-phase procedure on its own notes, audits it
and publishes a signed bundle (with its own tagger: the provider-only pipeline); a pooling
server is initialized and started as a separate process; three institutions make keys, are
registered, export their notes as contributions and upload them; the coordinator records the
audit, starts a pooled training run, waits for it and publishes the pooled pipeline; an
institution downloads it, verifies its signature and de-identifies the test notes. Both
pipelines are scored on the test notes. The embedded default data are synthetic notes:
discharge summaries at the provider, nursing notes, clinic letters and a mix at the three
sites, a mix in the test set, so the sites bring kinds of notes the provider lacks.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

from deidpool.adversary.runs import AdversarialSettings, AuditSettings
from deidpool.cli.http import ServerConnection
from deidpool.corpus.categories import PHI_TYPES
from deidpool.corpus.document import Document
from deidpool.corpus.tagging import tag_vocabulary
from deidpool.pseudonymization.schemes import PRIORS
from deidpool.report import readable
from deidpool.representer.progress import INTERVAL as PROGRESS_INTERVAL

log = logging.getLogger("deidpool.demo")

SITES = ("site_a", "site_b", "site_c")
# "audit": the notes the provider's audit judges its attacks on, held out from all training and of
# the provider's kind; with real data they are the `test` split.
ROLES = ("provider", *SITES, "test", "audit")
SYNTHETIC_KINDS = {"provider": ("discharge",), "site_a": ("nursing",), "site_b": ("letter",),
                   "site_c": ("discharge", "nursing", "letter"), "test": ("discharge", "nursing", "letter"),
                   "audit": ("discharge",)}
CORPUS_NAMES = {"physionet": "physionet", "meddocan": "meddocan", "i2b2-2006": "i2b2-2006"}


@dataclasses.dataclass(frozen=True)
class DemoSettings:
    """Sizes and budgets; the defaults fit the 10-minute target on a 2-core machine."""

    notes: dict = dataclasses.field(default_factory=lambda: {"provider": 64, "site_a": 50, "site_b": 50,
                                                             "site_c": 50, "test": 60, "audit": 32})
    seed: int = 0
    embeddings: str = "glove"
    representer: AdversarialSettings = AdversarialSettings(
        pretrain_epochs=3, pretrain_patience=2, max_epochs=2, patience=2, representer_units=64, tagger_units=64,
        adversary_units=32)
    # 6 x 4 draws for the attacks on the target and the floor (longer ones stayed at chance on the
    # demo's data); an attack on a positive control stops after the first epoch that breaks it (see
    # docs/privacy.md). The inversions train 12 epochs, not 24: a lighter attack than the reference
    # audits' (the target inverter still gains after 12 epochs), so the demo's inversion scores are a
    # floor of what a patient inverter reads back. Its neighbours and seed are the representer's and
    # the demo's own.
    audit: AuditSettings = AuditSettings(epochs=6, passes=4, inversion_epochs=12)
    # two processes share the audit's parts (adversary.runs.audit_run): on the 2-core machine the
    # second core otherwise idles, as TensorFlow gains little from two threads on these small models
    audit_workers: int = 2
    pooled_max_epochs: int = 6
    pooled_patience: int = 3
    pooled_units: int = 128  # the pooled tagger's units: the server's default (server.pooled.POOLED_UNITS)
    valid_fraction: float = 0.1

    @classmethod
    def tiny(cls) -> DemoSettings:
        """A configuration for tests: a few notes, one epoch of everything, tiny models."""
        return cls(notes={"provider": 8, "site_a": 4, "site_b": 4, "site_c": 4, "test": 4, "audit": 4},
                   representer=AdversarialSettings(pretrain_epochs=1, pretrain_patience=1, max_epochs=1, patience=1,
                                                   representer_units=4, tagger_units=4, adversary_units=4,
                                                   repr_size=8),
                   audit=AuditSettings(epochs=1, passes=1, inversion_epochs=1), audit_workers=1, pooled_max_epochs=2,
                   pooled_patience=1, pooled_units=4)


class DemoError(RuntimeError):
    """A stage of the demo failed; the message names the stage."""


@dataclasses.dataclass
class Stage:
    name: str
    seconds: float = 0.0
    details: dict = dataclasses.field(default_factory=dict)


class Stages:
    """Timing and facts of every stage, logged as each one ends."""

    def __init__(self):
        self.done: list[Stage] = []

    @contextmanager
    def stage(self, name: str):
        stage = Stage(name)
        log.info("stage %d: %s ...", len(self.done) + 1, name)
        started = time.perf_counter()
        try:
            yield stage.details
        except Exception as error:
            raise DemoError(f"stage '{name}' failed: {error}") from error
        stage.seconds = time.perf_counter() - started
        self.done.append(stage)
        log.info("stage %d: %s done in %.1f s %s", len(self.done), name, stage.seconds,
                 json.dumps(readable(stage.details), default=str))


def demo_documents(data: Path | None, fmt: str | None, settings: DemoSettings) -> dict[str, list[Document]]:
    """The notes of every role: synthetic by default, else the named splits of `data`."""
    if data is None:
        from deidpool.corpus.synth import generate_documents

        return {role: [dataclasses.replace(document, id=f"{role}-{document.id}") for document in
                       generate_documents(settings.notes[role], seed=1000 * settings.seed + index,
                                          kinds=SYNTHETIC_KINDS[role])]
                for index, role in enumerate(ROLES)}
    from deidpool.corpus.formats import read_corpus

    if fmt is None:
        raise DemoError("--data needs --format")
    documents = {role: read_corpus(data, fmt, split=role) for role in ROLES if role != "audit"}
    return {**documents, "audit": documents["test"]}


def tag_set(fmt: str | None, documents: dict[str, list[Document]]) -> list[str]:
    """The provider's tag vocabulary: every source PHI type the corpus format can hold (so
    every site's labels are covered, whatever the provider's own notes lack)."""
    corpus = CORPUS_NAMES.get(fmt or "", "i2b2-2014")
    types = {phi.source_type for phi in PHI_TYPES.values() if corpus in phi.corpus.split(", ")}
    seen = {span.source_type for notes in documents.values() for document in notes for span in document.spans}
    return tag_vocabulary(types | seen)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def peak_memory_mb(pid: int) -> float:
    """Peak resident memory (VmHWM) of the live process `pid`, in MB; 0 where unreadable."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    return next((int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmHWM:")), 0.0)


def child_pids(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def wait_until(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise DemoError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


class ServerProcess:
    """`deidpool server run` (with its worker unless `worker` is false) as a child process on a
    free loopback port."""

    def __init__(self, data_dir: Path, log_file: Path, worker: bool = True):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = log_file.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "deidpool", "server", "run", "--data-dir", str(data_dir), "--host", "127.0.0.1",
             "--port", str(self.port), "--worker" if worker else "--no-worker"],
            stdout=self._log, stderr=subprocess.STDOUT)

    def healthy(self) -> bool:
        if self.process.poll() is not None:
            raise DemoError(f"the server exited with status {self.process.returncode}; see {self._log.name}")
        try:
            return httpx.get(self.url + "/api/health", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def peak_memory_mb(self) -> dict[str, float]:
        """Peak resident memory of the server process and of its worker process(es), in MB."""
        workers = [peak_memory_mb(child) for child in child_pids(self.process.pid)]
        return {"server": peak_memory_mb(self.process.pid), "worker": max(workers, default=0.0)}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def unlabeled(documents: Sequence[Document]) -> list[Document]:
    """The notes without their spans, as an institution's new notes arrive."""
    return [Document(document.id, document.text) for document in documents]


def scores(gold: Sequence[Document], predicted: Sequence[Document]) -> dict:
    """The headline scores of the predictions (`deidpool.corpus.metrics.score_row`): token-level binary
    HIPAA P/R/F1 with the official i2b2 2014 tokens (primary) and with the project's tokenizer,
    entity-level strict P/R/F1, each F1 with its 95% bootstrap interval over the notes."""
    from deidpool.corpus.metrics import evaluate_corpus, score_row

    return score_row(evaluate_corpus(gold, predicted))


def run_demo(out: Path, data: Path | None = None, fmt: str | None = None,
             settings: DemoSettings = DemoSettings(), progress: bool = False) -> dict:
    """Run every stage into the empty (or new) folder `out`; returns the summary (also in
    out/summary.json) and writes out/report.html; with `progress`, the long stages show their
    progress (`deidpool.representer.progress`)."""
    from deidpool.adversary.runs import audit_run
    from deidpool.adversary.verdicts import CHANCE
    from deidpool.client.deidentify import find_phi
    from deidpool.client.transport import upload_contribution
    from deidpool.federation import export_party, party_keys, train_provider
    from deidpool.report import write_report
    from deidpool.representer import keys
    from deidpool.representer.bundle import open_bundle
    from deidpool.representer.embeddings import load_embeddings
    from deidpool.representer.tagger_runs import split_documents
    from deidpool.server.auth import signed_audit
    from deidpool.server.initialize import init_data_dir

    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise DemoError(f"{out} is not empty: give the demo a new or empty folder")
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    stages = Stages()
    summary: dict = {"data": str(data) if data else "synthetic (embedded generator)", "settings": _plain(settings)}

    with stages.stage("data: notes of every role") as facts:
        documents = demo_documents(data, fmt, settings)
        tags = tag_set(fmt, documents)
        vectors = load_embeddings(settings.embeddings)
        facts.update({role: f"{len(notes)} notes" for role, notes in documents.items()})
        facts["tags"] = len(tags)

    provider = out / "provider"
    with stages.stage("provider: three-phase training of the representer") as facts:
        train_docs, valid_docs = split_documents(documents["provider"], settings.valid_fraction, settings.seed)
        publisher = train_provider(train_docs, valid_docs, provider, settings.representer, tags=tags,
                                   embeddings=settings.embeddings, loaded_embeddings=vectors,
                                   data={"source": summary["data"], "role": "provider"}, progress=progress)
        metrics = publisher.metrics
        facts.update({"validation F1": round(metrics["val_f1"], 4),
                      "adversary accuracy": round(metrics["val_adv_accuracy"], 3),
                      "epochs": {phase: phase_metrics["epochs"] for phase, phase_metrics in metrics["phases"].items()}})

    with stages.stage("provider: privacy audit of the frozen representer") as facts:
        report = audit_run(provider / "run", train_docs, documents["audit"], provider / "audit",
                           dataclasses.replace(settings.audit, neighbours=settings.representer.neighbours,
                                               seed=settings.seed),
                           loaded_embeddings=vectors, progress=progress, workers=settings.audit_workers)
        facts.update({"verdict": report["verdict"], "held-out pairs": report["held_out_pairs"],
                      "fresh adversary accuracy": round(report["attacks"]["target/fresh"]["accuracy"], 3),
                      "lookup rate": round(report["lookup"]["target"]["rate"], 3),
                      "positive controls": {name: round(result["accuracy"], 3) for name, result
                                            in report["attacks"].items() if "control_succeeded" in result}})

    with stages.stage("provider: signed representer bundle") as facts:
        provider_pipeline = publisher.bundle(audit=provider / "audit")
        facts.update({"representer": provider_pipeline.representer_id,
                      "bytes": publisher.bundle_path.stat().st_size})

    with ExitStack() as stack:
        with stages.stage("server: init, start, representer and audit on record") as facts:
            token = init_data_dir(out / "server", publisher.keys.public_file)
            server = ServerProcess(out / "server", out / "server.log")
            stack.callback(server.stop)
            wait_until(server.healthy, 180, "the server to answer /api/health")
            api = stack.enter_context(ServerConnection(server.url, token))
            api.call("POST", "/api/representers", file=publisher.bundle_path, content_type="application/x-tar")
            api.call("POST", "/api/audits", json=signed_audit(
                {**report, "representer_id": provider_pipeline.representer_id}, publisher.keys.private()))
            server_keys = api.call("GET", "/api/keys")
            facts.update({"url": server.url, "audit on record": report["verdict"]})

        server_key = keys.public_key_from_pem(server_keys["encryption_public_key"], keys.ENCRYPTION,
                                              "the server's encryption key")
        contributions = {}
        for institution in ("provider", *SITES):
            with stages.stage(f"{institution}: keys, registration, export, upload") as facts:
                home = out / "institutions" / institution
                party = party_keys(home / "keys", institution)
                api.call("POST", "/api/institutions",
                         json={"id": institution, "public_key": party.keys.public_file.read_text()})
                api.download("/api/representers/current/bundle", home / "representer.tar")
                bundle = open_bundle(home / "representer.tar", publisher.keys.public())
                notes = train_docs + valid_docs if institution == "provider" else documents[institution]
                header, sealed = export_party(notes, bundle, bundle.load_embeddings(), home / "contribution.dpc",
                                              party, server_key=server_key, progress=progress)
                upload_contribution(home / "contribution.dpc", server.url, signing_key=party.keys.private())
                bound = sealed["reidentification_bound"]["overall"]["mean_success"]
                contributions[institution] = {"sentences": header.sentences, "tokens": header.tokens,
                                              "bytes": (home / "contribution.dpc").stat().st_size,
                                              "pseudonymization": header.pseudonymization,
                                              "neighbours": header.neighbours,
                                              **{f"bound_{prior}": bound[prior] for prior in PRIORS}}
                facts.update(contributions[institution])

        with stages.stage("coordinator: pooled training run on the server") as facts:
            run = api.call("POST", "/api/runs", json={
                "max_epochs": settings.pooled_max_epochs, "patience": settings.pooled_patience,
                "lstm_units": settings.pooled_units,
                "seed": settings.seed, "valid_fraction": settings.valid_fraction})
            run = _wait_for_run(api, run["id"])
            facts.update({"run": run["id"], "epochs": len(run["epochs"]), "best epoch": run["best_epoch"],
                          "validation F1": round(run["metrics"]["val_f1"], 4)})

        with stages.stage("coordinator: publish the pooled pipeline") as facts:
            override = report["verdict"] != CHANCE
            published = api.call("POST", f"/api/runs/{run['id']}/publish", json={"override_audit": override})
            facts.update({"pipeline": published.get("id"), "audit override": override})

        with stages.stage("site_a: download, verify and de-identify the test notes") as facts:
            home = out / "institutions" / "site_a"
            api.download("/api/pipelines/latest/bundle", home / "pipeline.tar")
            server_signing = keys.public_key_from_pem(server_keys["signing_public_key"], keys.SIGNING,
                                                      "the server's signing key")
            pooled_pipeline = open_bundle(home / "pipeline.tar", server_signing)
            test_notes = unlabeled(documents["test"])
            pooled = list(find_phi(test_notes, pooled_pipeline, pooled_pipeline.load_embeddings(),
                                   progress=progress))
            provider_only = list(find_phi(test_notes, provider_pipeline, vectors, progress=progress))
            facts.update({"notes": len(test_notes), "PHI spans found": sum(len(note.spans) for note in pooled)})
        memory = {"demo": peak_memory_mb(os.getpid()), **server.peak_memory_mb()}

    summary.update({
        "stages": [dataclasses.asdict(stage) for stage in stages.done],
        "contributions": contributions,
        "scores": {"provider-only": scores(documents["test"], provider_only),
                   "pooled": scores(documents["test"], pooled)},
        "audit": {"verdict": report["verdict"], "attacks": {name: result["accuracy"] for name, result in
                                                            report["attacks"].items()},
                  "lookup": report["lookup"]["target"]["rate"]},
        "pooled_run": run,
        "provider_history": json.loads((provider / "run" / "history.json").read_text()),
        "wall_seconds": time.perf_counter() - started,
        "peak_memory_mb": memory,
    })
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    write_report(summary, out, audit_plot=provider / "audit" / "accuracy.png")
    return summary


def _wait_for_run(api: ServerConnection, run_id: int, timeout: float = 3600, interval: float = 2.0) -> dict:
    """The run once the worker has finished it, logging each new epoch (and, between two, a line
    every `deidpool.representer.progress.INTERVAL` seconds)."""
    started = said = time.monotonic()
    deadline, seen = started + timeout, 0
    while time.monotonic() < deadline:
        run = api.call("GET", f"/api/runs/{run_id}")
        for epoch in run["epochs"][seen:]:
            log.info("pooled run %s: epoch %s of at most %s, %s", run_id, epoch["epoch"], run["config"]["max_epochs"],
                     ", ".join(f"{k} {v:.4g}" for k, v in epoch.items() if isinstance(v, float)))
            said = time.monotonic()
        seen = len(run["epochs"])
        if time.monotonic() - said >= PROGRESS_INTERVAL:
            log.info("pooled run %s: %s, %d of at most %s epochs done, %.0f s elapsed", run_id, run["status"], seen,
                     run["config"]["max_epochs"], time.monotonic() - started)
            said = time.monotonic()
        if run["status"] == "succeeded":
            return run
        if run["status"] == "failed":
            raise DemoError(f"pooled run {run_id} failed: {run.get('error')}")
        time.sleep(interval)
    raise DemoError(f"pooled run {run_id} did not finish within {timeout:.0f} s")


def _plain(settings: DemoSettings) -> dict:
    return json.loads(json.dumps(dataclasses.asdict(settings), default=str))
