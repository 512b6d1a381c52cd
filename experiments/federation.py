"""The federation benchmark: does pooling the institutions' noisy representations beat the
provider's data alone, and what does a hospital gain by joining? (N = 100, d = 50 or --repr-size)

    python experiments/federation.py --corpus meddocan --seeds 0 1 2 [--time-budget SECONDS]
    python experiments/federation.py --corpus physionet --seeds 0 1 2 3 4 [--results-name federation_reference]
    python experiments/federation.py --corpus meddocan --test PATH --test-format FMT [--test-split NAME] \\
        --results-name NAME        # the same runs scored on other held-out notes
    python experiments/federation.py --corpus meddocan --seeds 0 1 2 --report-only [--against NAME[:VARIANT]]

Corpora (`CORPORA`): PhysioNet (English nursing notes, GloVe + casing, `splits.json`: provider,
site_a, site_b, site_c; test notes: the `test` split) and MEDDOCAN (Spanish clinical cases,
`meddocan/splits.json` over train: provider 200 documents and three sites of 100, each party
holding other journals, i.e. specialties; test notes: dev). On MEDDOCAN the provider trains
FastText (gensim, subwords) on its own notes only, as a real provider would, and ships it with
its representer; its headline score is entity strict F1 on the source types (the MEDDOCAN
script's measure), PhysioNet's the official i2b2 2014 token HIPAA F1. Every row also carries
the other.

Budgets default to docs/method.md's reference: P1 and P2 up to 20 epochs (patience 5), P3 up to 40
(patience 10), taggers up to 25 epochs (early stopping on the validation loss, patience 5), audits
20 epochs; smaller ones (--p1 4 --p3 2 ...) check that everything runs. With --time-budget the
process stops after the last epoch that fits and exits 75; a rerun resumes from the checkpoints.
--selection f1 picks the representer's best P1 and P3 epochs by validation PHI F1 instead of
docs/method.md's validation loss (adversary.procedures.SELECTIONS); every tagger stops on its
validation loss unless --monitor says otherwise (val_f1: the validation PHI F1 of the runs before
it was an option, whose budgets name no monitor; another one is recorded in the seed's budget).
--skip leaves stages 4-5's named taggers, the growth curve's smaller pools or the audit out; a later
run without it adds them. --pooled-units sizes the server's pooled taggers (128, the server's
default; another size is recorded in the seed's budget). --repr-size, --representer-units, --input-noise and
--output-noise change the representer (docs/method.md's d, its BiLSTM's units per direction and the
initial std of its input and output noise per dimension; at d = 300, an output noise of 0.0202
keeps the default's noise-to-signal ratio of 0.35), recorded in the seed's budget when not the
default.

Per seed, in this order, each stage kept in the seed's rows.json as soon as it is done (the
representation gap, stage 1 against 3's full pool, is known first):
1. the text tagger on raw embeddings of all parties' notes (the non-private upper bound; the
   tagger-run code of the baselines);
2. the provider's representer (three-phase, on its notes);
3. every party's export as a real contribution (client.export: gold PHI pseudonymized, noise on,
   shuffled, encrypted, signed), and the server's own trainer (server.pooled) on the pools
   `POOLS` (4 institutions first, then 3, 2 and 1: the growth curve), each published as a pipeline and
   scored with client.deidentify on the test notes and on site_c (sight unseen), alone and merged with
   the pattern layer (`client deidentify --patterns`);
4. the other text taggers of `TEXT_TAGGERS`: pseudonymized (N = 100) notes of all parties, the
   provider's notes, and each site's own notes (the site's view: what it has without joining);
5. the export-path audit of the representer.
Rows on the test notes keep each note's counts, so that the report gives every difference its
paired bootstrap interval (`deidpool.corpus.metrics.f1_difference_interval`). Runs live in
runs/<results name>/seed-S (resumable); the tables go to results/federation/<results name>.md, .json and the
plots beside them. The JSON keeps every finished seed's rows, so seeds run in separate processes,
sessions or machines add up in one report.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from deidpool.adversary.procedures import SELECTIONS
from deidpool.corpus.metrics import COLUMN_TITLES, PRIMARY, Counts, f1_difference_interval, micro_f1
from deidpool.representer.training import MONITORS, RESUMABLE_EXIT_STATUS, TimeBudgetExhausted, time_budget
from results_files import (
    SCORE_COLUMNS,
    commit_text,
    json_text,
    over_seeds,
    points_cell,
    record,
    results_file,
    save_figure,
    score_header,
    spread,
    write_run_record,
)

if TYPE_CHECKING:
    from deidpool.federation import Provider

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
SITES = ("site_a", "site_b", "site_c")
PARTIES = ("provider", *SITES)
REPRESENTER_RUN = "representer"  # the provider's representer run in a seed folder (deidpool.federation.provider_at)
POOLS = {"provider-only": ("provider",), "pooled-2": ("provider", "site_a"),
         "pooled-no-c": ("provider", "site_a", "site_b"), "pooled": PARTIES}
GROWTH = tuple(POOLS)  # 1 to 4 institutions
NEIGHBOURS = 100
STACK_PARTIES = (*SITES, "provider")  # whose stacks (`client personalize`) a seed builds, in this order
STACK = "stacks"  # the stage of the parties' stacks (skippable)
STACK_MIN_RECALL = 0.99  # the operating point the stack rows report beside the default one
# name: (the parties whose raw notes it trains on, pseudonymizer's N or None)
TEXT_TAGGERS = {"raw": (PARTIES, None), "pseudo": (PARTIES, NEIGHBOURS), "raw-provider": (("provider",), None),
                **{f"raw-{site}": ((site,), None) for site in SITES}}
TEXT_TAGGER_UNITS = 128  # the text taggers' LSTM units per direction
ROWS = [("non-private upper bound (raw text, all parties' notes)", "raw", "test"),
        ("non-private, provider's notes only (raw text)", "raw-provider", "test"),
        *((f"non-private, {site}'s own notes only (raw text)", f"raw-{site}", "test") for site in SITES),
        (f"pseudonymization N={NEIGHBOURS} (all parties' notes)", "pseudo", "test"),
        ("provider-only (representations)", "provider-only", "test"),
        ("provider + site_a (representations)", "pooled-2", "test"),
        ("provider + site_a + site_b (representations)", "pooled-no-c", "test"),
        ("pooled: provider + 3 sites (representations, server)", "pooled", "test"),
        ("sight-unseen: provider-only on site_c", "provider-only", "site_c"),
        ("sight-unseen: pooled without site_c, on site_c", "pooled-no-c", "site_c"),
        *(row for party in STACK_PARTIES for row in (
            (f"{party} alone: its own character tagger (raw text, its notes; memory in its layer rows)",
             f"local-{party}", "test"),
            (f"pooled pipeline (its layer rows: + {party}'s PHI memory)", f"pooled-memory-{party}", "test"),
            (f"{party}'s stack: pooled pipeline + its character tagger (memory in its layer rows)",
             f"stack-{party}", "test"),
            (f"{party}'s stack at --min-recall {STACK_MIN_RECALL}", f"stack-recall-{party}", "test")))]
BUDGET = ("p1", "p1_patience", "p3", "p3_patience", "tagger_epochs", "patience", "audit_epochs",
          "selection", "test")  # in every seed's rows
SKIPPABLE = (*(name for name in TEXT_TAGGERS if name != "raw"), *(name for name in GROWTH if name != "pooled"),
             STACK, "audit")  # stages a shorter run may leave out (the growth curve's smaller pools included)
# the representer's settings a run may change, and their defaults
REPRESENTATION = {"repr_size": 50, "representer_units": 128, "input_noise": None, "output_noise": None,
                  "representer_data": "provider", "representer_input": "embeddings"}
REPRESENTER_DATA = ("provider", "provider+copy")  # its notes; them and a copy pseudonymized as at export
REPRESENTER_INPUT = ("embeddings", "embeddings+chars")  # what it reads of each token
# settings a seed's budget records only where they are not these (seeds run before they were options still match)
RECORDED_IF_CHANGED = {"monitor": "val_f1", "pooled_units": 128, **REPRESENTATION}
# their command-line defaults today (a report's command names every one a seed differs in)
DEFAULTS_NOW = {**RECORDED_IF_CHANGED, "monitor": "val_loss"}
PATTERNS = "+patterns"  # suffix of a tagger's rows merged with the pattern layer
PATTERN_LAYER = "pattern_layer"  # key of the language whose pattern layer a seed's "+patterns" rows used (absent: "en")
NOTE_COUNTS = "notes"  # key of a test row's per-note counts: {measure: [[tp, fp, fn], ...]}, document-id order


@dataclass(frozen=True)
class Corpus:
    """One federation: where the parties' and the test notes are, and how they are scored."""
    title: str
    notes: Path  # the parties' notes, read with `split=<party>`
    fmt: str
    test: tuple[str, str, str | None]  # default test notes: path (relative to the repository's parent), format, split
    embeddings: str  # "glove", or "fasttext-provider" (trained by the provider on its own notes)
    entity_key: str  # the span label entity scores compare
    headline: str  # the result key of the headline F1
    language: str  # of the notes (the export's frequency prior)


CORPORA = {
    "physionet": Corpus("PhysioNet, GloVe + casing", SHARED / "physionet-deid", "physionet",
                        ("shared/data/physionet-deid", "physionet", "test"), "glove", "type", PRIMARY, "en"),
    "meddocan": Corpus("MEDDOCAN, the provider's FastText + casing", SHARED / "meddocan" / "train" / "xml", "meddocan",
                       ("shared/data/meddocan/dev/xml", "meddocan", None), "fasttext-provider",
                       "source_type", "entity_strict_f1", "es"),
}
MEASURES = {PRIMARY: "token_official_hipaa", "entity_strict_f1": "entity_strict"}  # headline key -> measure
MONITOR_TITLES = {"val_f1": "PHI F1", "val_tag_f1": "exact-tag F1", "val_loss": "loss"}  # keys: training.MONITORS


def progress(message: str) -> None:
    print(f"[federation] {message}", flush=True)


def provider_embeddings(corpus: Corpus, folder: Path, provider_notes: list, seed: int) -> tuple[str, object]:
    """(spec, vectors) of the embeddings every party uses: GloVe, or FastText the provider trains
    on its own notes (kept in the seed folder, so that every stage and rerun reads the same vectors)."""
    from deidpool.representer.embeddings import load_embeddings, load_fasttext_bin, train_fasttext_on_notes

    if corpus.embeddings == "glove":
        return "glove", load_embeddings("glove")
    path = folder / "fasttext-provider.bin"
    if not path.exists():
        sentences = train_fasttext_on_notes(provider_notes, path, seed=seed)
        progress(f"FastText trained on the provider's {sentences:,} sentences")
    return f"fasttext:{path}", load_fasttext_bin(path)


def test_rows(corpus: Corpus, gold: list, predicted: list, extra: dict) -> dict[str, dict]:
    """The rows of one tagger's predictions on the test notes, alone and merged with the pattern
    layer: the headline scores and every note's counts of the headline measures."""
    from deidpool.client.patterns import patterns_for, with_patterns

    patterns = patterns_for(corpus.language)
    return {suffix: scored_row(corpus, gold, found, extra)
            for suffix, found in (("", predicted), (PATTERNS, [with_patterns(d, patterns) for d in predicted]))}


def scored_row(corpus: Corpus, gold: list, found: list, extra: dict) -> dict:
    """The headline scores of the predictions `found` on the test notes `gold`, `extra` and every
    note's counts of the headline measures."""
    from deidpool.corpus.metrics import document_counts, evaluate_corpus, score_row

    notes = {measure: [[c.tp, c.fp, c.fn] for c in document_counts(gold, found, measure, corpus.entity_key)]
             for measure in MEASURES.values()}
    return {**score_row(evaluate_corpus(gold, found, corpus.entity_key)), **extra, NOTE_COUNTS: notes}


def seed_notes(corpus: Corpus, test: tuple, seed: int) -> tuple[dict, tuple]:
    """Every party's notes and the test notes `test` (path, format, split) by name, and the
    provider's (training, validation) split of seed `seed` (the representer's)."""
    from deidpool.corpus.formats import read_corpus
    from deidpool.representer.tagger_runs import split_documents

    documents = {party: read_corpus(corpus.notes, corpus.fmt, split=party) for party in PARTIES}
    path, fmt, split = test
    documents["test"] = read_corpus(REPO.parent / path, fmt, split=split)
    return documents, split_documents(documents["provider"], 0.1, seed)


def run_seed(seed: int, args) -> dict:
    """Every row of one seed; each stage is stored in the seed folder's rows.json when done, and
    a rerun does only what is missing."""
    corpus = CORPORA[args.corpus]
    folder = REPO / "runs" / args.results_name / f"seed-{seed}"
    cache = folder / "rows.json"
    rows = stored_rows(cache, run_budget(args))
    rows.setdefault(PATTERN_LAYER, corpus.language if len(rows) == 1 else "en")

    def keep(new_rows: dict) -> None:
        rows.update(new_rows)
        folder.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(rows, indent=1) + "\n")

    if all(f"{name}@test" in rows for name in (*TEXT_TAGGERS, *POOLS, *(f"stack-{p}" for p in STACK_PARTIES))) \
            and "audit" in rows \
            and rows[PATTERN_LAYER] == corpus.language:
        return rows
    documents, provider_split = seed_notes(corpus, args.test, seed)
    write_run_record(folder, seed=seed, budget=rows["budget"], data=args.corpus)
    embeddings = provider_embeddings(corpus, folder, documents["provider"], seed)
    vectors = embeddings[1]
    # the raw-text tagger on all notes, then the exports' pools (the full pool first): a seed's
    # representation gap is known before its other text taggers train
    first, *others = TEXT_TAGGERS
    if f"{first}@test" not in rows:
        keep(text_tagger_rows(corpus, folder, seed, first, documents, provider_split, embeddings, args,
                              monitor=args.monitor))
    if not all(f"{name}@test" in rows for name in POOLS if name not in args.skip):
        keep(pooled_rows(corpus, folder, seed, documents, provider_split, embeddings, rows, args))
    missing_stacks = [party for party in STACK_PARTIES if f"stack-{party}@test" not in rows]
    if STACK not in args.skip and "pooled@test" in rows and missing_stacks:
        pooled = pooled_test_predictions(folder, documents["test"], vectors)
        for party in missing_stacks:
            keep(stack_rows(corpus, folder, seed, party, documents, provider_split, vectors, pooled, args))
    for name in others:
        if f"{name}@test" not in rows and name not in args.skip:
            keep(text_tagger_rows(corpus, folder, seed, name, documents, provider_split, embeddings, args,
                                  monitor=args.monitor))
    if "audit" not in rows and "audit" not in args.skip:
        from deidpool.adversary.runs import AuditSettings, audit_run

        progress(f"seed {seed}: auditing the representer")
        report = audit_run(folder / REPRESENTER_RUN, *provider_split, folder / "audit",
                           AuditSettings(epochs=args.audit_epochs, seed=seed), loaded_embeddings=vectors)
        keep({"audit": {"verdict": report["verdict"], "fresh_accuracy": report["attacks"]["target/fresh"]["accuracy"],
                        "continued_accuracy": report["attacks"].get("target/continued", {}).get("accuracy"),
                        "lookup_rate": report["lookup"]["target"]["rate"]}})
    if rows[PATTERN_LAYER] != corpus.language:
        progress(f"seed {seed}: the pattern layer's rows again, with the layer for {corpus.language!r}")
        keep({**layered_rows(corpus, folder, documents, rows, vectors), PATTERN_LAYER: corpus.language})
    return rows


def layered_rows(corpus: Corpus, folder: Path, documents: dict, rows: dict, vectors) -> dict[str, dict]:
    """Every tagger's "+patterns" rows anew from its predictions, merged with the pattern layer of
    `corpus.language` (rows of a seed whose layer was another's: an earlier version ran the English
    layer on every corpus); each row keeps its training facts (epochs, sentences)."""
    from deidpool.client.patterns import patterns_for, with_patterns
    from deidpool.corpus.metrics import evaluate_corpus, score_row

    patterns, fresh = patterns_for(corpus.language), {}
    for name in (*TEXT_TAGGERS, *POOLS):
        splits = {"test": documents["test"], **({"site_c": documents["site_c"]} if name in POOLS else {})}
        found = predictions(folder, name, splits, vectors)
        kept = {key: value for key, value in rows[f"{name}{PATTERNS}@test"].items()
                if key in ("epochs", "sentences", "epoch_seconds")}
        fresh[f"{name}{PATTERNS}@test"] = test_rows(corpus, documents["test"], found["test"], kept)[PATTERNS]
        if name in POOLS:
            layered = [with_patterns(d, patterns) for d in found["site_c"]]
            fresh[f"{name}{PATTERNS}@site_c"] = {**score_row(evaluate_corpus(documents["site_c"], layered,
                                                                             corpus.entity_key)), **kept}
    return fresh


def run_budget(args) -> dict:
    """What a seed's rows were trained with: `BUDGET`, and `RECORDED_IF_CHANGED` where not its default."""
    changed = {key: getattr(args, key) for key, default in RECORDED_IF_CHANGED.items() if getattr(args, key) != default}
    return {**{key: getattr(args, key) for key in BUDGET}, **changed}


def stored_rows(cache: Path, budget: dict) -> dict[str, dict]:
    """The rows a seed's rows.json `cache` holds (none yet: only `budget`), refused when they were
    run with another budget."""
    rows = json.loads(cache.read_text()) if cache.exists() else {}
    if rows.get("budget", budget) != budget:
        raise SystemExit(f"{cache} was run with {rows['budget']}, not {budget}: use another --results-name")
    return {**rows, "budget": budget}


def text_tagger_rows(corpus: Corpus, folder: Path, seed: int, name: str, documents: dict, provider_split: tuple,
                     embeddings: tuple, args, *, kind: str | None = None, run_dir: Path | None = None,
                     monitor: str = "val_f1", lstm_units: int = TEXT_TAGGER_UNITS,
                     chars: bool = False) -> dict[str, dict]:
    """Train (or resume) the text tagger `kind` of `TEXT_TAGGERS` (default: `name`) in `run_dir`
    (default `folder`/taggers/`name`), `lstm_units` per direction (reading characters too with
    `chars`), its early stopping on `monitor`,
    and return its rows on the test notes, named `name`. The provider's notes keep the
    representer's split (`provider_split`: train, valid); other notes are split anew.
    `embeddings`: (spec, vectors)."""
    import keras

    from deidpool.pseudonymization.pseudonymize import Pseudonymizer
    from deidpool.representer.tagger_runs import TaggerSettings, split_documents, train_tagger_run

    spec, vectors = embeddings
    parties, neighbours = TEXT_TAGGERS[kind or name]
    run_dir = run_dir or folder / "taggers" / name
    train, valid = provider_split if parties == ("provider",) else split_documents(
        [d for party in parties for d in documents[party]], 0.1, seed)
    progress(f"seed {seed}: text tagger {name} on {len(train)} + {len(valid)} notes")
    keras.utils.set_random_seed(seed)
    settings = TaggerSettings(embeddings=spec, chars=chars, lstm_units=lstm_units, max_epochs=args.tagger_epochs,
                              patience=args.patience, monitor=monitor, seed=seed)
    training = train_tagger_run(train, valid, run_dir, settings,
                                pseudonymizer=Pseudonymizer(vectors, neighbours) if neighbours else None,
                                loaded_embeddings=vectors, progress=False)
    predicted = tagger_predictions(run_dir, {"test": documents["test"]}, vectors)["test"]
    found = test_rows(corpus, documents["test"], predicted, {"epochs": training["epochs"],
                                                             "best_epoch": training["best_epoch"]})
    return {f"{name}{suffix}@test": row for suffix, row in found.items()}


def pooled_rows(corpus: Corpus, folder: Path, seed: int, documents: dict, provider_split: tuple, embeddings: tuple,
                done: dict, args) -> dict[str, dict]:
    """Train the provider's representer, export every party's notes through the real client path
    and train the server's pooled tagger on each pool of `POOLS` that `done` lacks; their rows on
    the test notes and on site_c. `embeddings`: (spec, vectors)."""
    from deidpool.adversary.runs import AdversarialSettings
    from deidpool.client.export import ExportSettings
    from deidpool.client.patterns import patterns_for, with_patterns
    from deidpool.corpus.metrics import evaluate_corpus, score_row
    from deidpool.demo import tag_set
    from deidpool.federation import (
        PooledSettings,
        export_party,
        party_keys,
        pooling_server_key,
        train_pooled_round,
        train_provider,
    )

    spec, vectors = embeddings
    tags = tag_set(corpus.fmt, documents)
    settings = AdversarialSettings(pretrain_epochs=args.p1, pretrain_patience=args.p1_patience, max_epochs=args.p3,
                                   patience=args.p3_patience, selection=args.selection, seed=seed,
                                   repr_size=args.repr_size, representer_units=args.representer_units,
                                   input_noise=args.input_noise, output_noise=args.output_noise,
                                   pseudonymized_copy=args.representer_data == "provider+copy",
                                   representer_chars=args.representer_input == "embeddings+chars")
    progress(f"seed {seed}: the provider's representer (three-phase, d = {args.repr_size})")
    provider = train_provider(*provider_split, folder, settings, run=REPRESENTER_RUN, tags=tags, embeddings=spec,
                              loaded_embeddings=vectors, data={"path": str(corpus.notes), "split": "provider"},
                              language=corpus.language)
    bundle = provider.bundle()
    server_key = pooling_server_key(folder / "keys")
    contributions = {}
    for institution in PARTIES:
        party = party_keys(folder / "keys" / institution, institution)
        path = folder / "contributions" / f"{institution}.dpc"
        if not path.exists():
            progress(f"seed {seed}: {institution} exports its notes")
            export_party(party_notes(documents, provider_split, institution), bundle, vectors, path, party,
                         ExportSettings(language=corpus.language), server_key=server_key.public_key())
        contributions[institution] = party.contribution(path)
    pooled_settings = PooledSettings(max_epochs=args.tagger_epochs, patience=args.patience,
                                     lstm_units=args.pooled_units, monitor=args.monitor, seed=seed)
    rows = {"representer": {"val_f1": provider.metrics["val_f1"],
                            "p3_adversary_accuracy": provider.metrics["val_adv_accuracy"]}}
    for name in reversed(POOLS):  # the full pool first
        members = POOLS[name]
        if f"{name}@test" in done or name in args.skip:
            continue
        progress(f"seed {seed}: the server trains {name} ({' + '.join(members)})")
        pooled = train_pooled_round([contributions[member] for member in members], server_key, bundle,
                                    folder / "taggers" / name, folder / "pipelines" / f"{name}.tar", tags=tags,
                                    signing_key=provider.keys.private(), settings=pooled_settings)
        trained = {"epochs": pooled.training["epochs"], "best_epoch": pooled.training["best_epoch"],
                   "sentences": pooled.sentences, "epoch_seconds": statistics.median(
            epoch["seconds"] for epoch in json.loads((pooled.run_dir / "history.json").read_text()))}
        found = predictions(folder, name, {"test": documents["test"], "site_c": documents["site_c"]}, vectors)
        for suffix, row in test_rows(corpus, documents["test"], found["test"], trained).items():
            rows[f"{name}{suffix}@test"] = row
        layered = [with_patterns(d, patterns_for(corpus.language)) for d in found["site_c"]]
        for suffix, predicted in (("", found["site_c"]), (PATTERNS, layered)):
            rows[f"{name}{suffix}@site_c"] = {
                **score_row(evaluate_corpus(documents["site_c"], predicted, corpus.entity_key)), **trained}
    return rows


def party_notes(documents: dict, provider_split: tuple, party: str) -> list:
    """The notes `party` exports: its own, the provider's in the representer's split's order
    (`provider_split`: train, then valid)."""
    return [*provider_split[0], *provider_split[1]] if party == "provider" else documents[party]


def pooled_test_predictions(folder: Path, test: list, vectors) -> list:
    """The full pool's published pipeline on the unlabeled `test` notes: every stack's pooled half."""
    from deidpool.demo import unlabeled

    return predictions(folder, "pooled", {"test": list(unlabeled(test))}, vectors)["test"]


def stack_rows(corpus: Corpus, folder: Path, seed: int, party: str, documents: dict, provider_split: tuple,
               vectors, pooled: list, args, lstm_units: int = TEXT_TAGGER_UNITS) -> dict[str, dict]:
    """Build `party`'s stack on the full pool's pipeline as `client personalize` does (its own
    character tagger on its training notes, early stopping and the operating point on its
    validation notes: the provider's the representer's split, a site's split anew) and score on the
    test notes: the local tagger alone (Viterbi) and with the pattern layer and the party's PHI memory
    (what the party has without joining), the pooled pipeline's predictions `pooled` with them, the
    stack's two taggers at the chosen operating point without and with them, and the whole stack at
    `STACK_MIN_RECALL`.
    A stack built by an earlier version is rescored with its weight chosen again by today's
    combination rule (`deidpool.client.combination`)."""
    import shutil
    from dataclasses import replace

    from deidpool.client.patterns import with_patterns
    from deidpool.client.stack import STACK_FILE, TAGGER_RUN, build_stack
    from deidpool.demo import unlabeled
    from deidpool.representer.bundle import open_bundle

    train, valid = stack_notes(documents, provider_split, party, seed)
    pipeline = open_bundle(folder / "pipelines" / "pooled.tar", seed_provider(folder).keys.public())
    out = folder / STACK / party
    if not (out / STACK_FILE).exists():
        shutil.rmtree(out, ignore_errors=True)  # a build the time budget stopped: from the start
        progress(f"seed {seed}: {party} builds its stack on {len(train)} + {len(valid)} notes")
        build_stack(out, pipeline, vectors, train, valid, language=corpus.language, lstm_units=lstm_units,
                    max_epochs=args.tagger_epochs, patience=args.patience, seed=seed, progress=False)
    test = list(unlabeled(documents["test"]))
    stack, at_recall, sentences, combined = opened_stack(out, pipeline, vectors, valid, test)
    local = tagger_predictions(out / TAGGER_RUN, {"test": test}, vectors)["test"]
    found = {f"local-{party}": local,
             f"local-{party}{PATTERNS}": [with_patterns(d, stack.patterns) for d in local],
             f"pooled-memory-{party}{PATTERNS}": [with_patterns(d, stack.patterns) for d in pooled],
             f"stack-{party}": replace(stack, patterns=()).documents_at(test, sentences, combined, stack.threshold),
             f"stack-{party}{PATTERNS}": stack.documents_at(test, sentences, combined, stack.threshold),
             f"stack-recall-{party}{PATTERNS}": stack.documents_at(test, sentences, combined,
                                                                 at_recall["chosen"]["threshold"])}
    hindsight = threshold_in_hindsight(documents["test"], lambda threshold: stack.documents_at(
        test, sentences, combined, threshold), STACK_MIN_RECALL)
    point = {"weight": stack.weight, "threshold": stack.threshold, "train_notes": len(train),
             "valid_notes": len(valid), "valid": {key: at_recall["default"][key] for key in ("precision", "recall")},
             "at_recall": {"min_recall": STACK_MIN_RECALL, "reached": at_recall["reached"],
                           **{key: at_recall["chosen"][key] for key in ("threshold", "precision", "recall")}},
             "test_hindsight": hindsight}
    return {f"{name}@test": scored_row(corpus, documents["test"], predicted, {"operating_point": point})
            for name, predicted in found.items()}


def stack_notes(documents: dict, provider_split: tuple, party: str, seed: int) -> tuple[list, list]:
    """(training, validation) notes of `party`'s stack: the provider's the representer's split
    `provider_split`, a site's its notes split anew with the seed."""
    from deidpool.representer.tagger_runs import split_documents

    return provider_split if party == "provider" else split_documents(documents[party], 0.1, seed)


def opened_stack(out: Path, pipeline, vectors, valid: list, test: list) -> tuple:
    """The stack built in `out` on the published `pipeline`, its weight chosen again on the
    validation notes `valid` by today's combination rule (`deidpool.client.combination`), with its
    operating point at `STACK_MIN_RECALL` there, the test notes' (`test`, unlabeled) sentences and
    their combined marginals: (stack, operating point, sentences, combined)."""
    from dataclasses import replace

    from deidpool.client.deidentify import prepared_chunks
    from deidpool.client.stack import open_stack

    stack = open_stack(out, pipeline, vectors)
    at_recall = stack.operating_point(valid, STACK_MIN_RECALL)
    stack = replace(stack, weight=at_recall["weight"])
    _, sentences, data = next(prepared_chunks(test, vectors, len(test), pipeline.reads_chars))
    return stack, at_recall, sentences, stack.combined(stack.marginals(sentences, data), stack.weight)


def threshold_in_hindsight(gold: list, predict: Callable[[float], list], min_recall: float) -> dict:
    """The largest of the operating point's thresholds whose recall on `gold` reaches `min_recall`
    (token HIPAA, the stack's measure), found by bisection (recall falls as the threshold rises),
    with its precision: what a choice of the threshold on these very notes would give, the bound
    on what any choice on validation notes can give. {"threshold", "precision", "recall", "reached"};
    when none reaches `min_recall`, the lowest threshold's point."""
    from deidpool.client.operating_point import THRESHOLDS, scored_point

    def point(index: int) -> dict:
        return scored_point(gold, predict(THRESHOLDS[index]), THRESHOLDS[index])

    low, high = 0, len(THRESHOLDS) - 1  # THRESHOLDS[low] reaches, THRESHOLDS[high + 1:] do not
    lowest = point(low)
    if lowest["recall"] < min_recall:
        return {**{key: lowest[key] for key in ("threshold", "precision", "recall")}, "reached": False}
    best = lowest
    while low < high:
        middle = (low + high + 1) // 2
        candidate = point(middle)
        if candidate["recall"] >= min_recall:
            low, best = middle, candidate
        else:
            high = middle - 1
    return {**{key: best[key] for key in ("threshold", "precision", "recall")}, "reached": True}


def predictions(folder: Path, name: str, splits: dict[str, list], vectors) -> dict[str, list]:
    """What the seed folder's tagger `name` finds in the documents of each split of `splits`
    (their PHI spans hidden), the tagger opened once: a published pipeline (a pool of `POOLS`,
    its signature checked) or a text tagger of `TEXT_TAGGERS`."""
    if name in POOLS:
        return pipeline_predictions(folder / "pipelines" / f"{name}.tar", seed_provider(folder), splits, vectors)
    return tagger_predictions(folder / "taggers" / name, splits, vectors)


def tagger_predictions(run_dir: Path, splits: dict[str, list], vectors) -> dict[str, list]:
    """What the text tagger run in `run_dir` finds in each split of `splits` (PHI spans hidden)."""
    from deidpool.demo import unlabeled
    from deidpool.representer.tagger_runs import load_tagger_run, predict_documents

    tagger, config, _ = load_tagger_run(run_dir, vectors)
    return {split: predict_documents(tagger, config, vectors, unlabeled(documents))
            for split, documents in splits.items()}


def seed_provider(folder: Path) -> Provider:
    """The provider trained in the seed folder `folder`: its keys and its representer run."""
    from deidpool.federation import provider_at

    return provider_at(folder, REPRESENTER_RUN)


def pipeline_predictions(pipeline: Path, provider: Provider, splits: dict[str, list], vectors) -> dict[str, list]:
    """What the published `pipeline` (signed by `provider`'s key) finds in each split."""
    from deidpool.client.deidentify import find_phi
    from deidpool.demo import unlabeled
    from deidpool.representer.bundle import open_bundle

    opened = open_bundle(pipeline, provider.keys.public())
    return {split: list(find_phi(unlabeled(documents), opened, vectors)) for split, documents in splits.items()}


# -- the report ------------------------------------------------------------------------------

# (first, second, what the difference means, the target it serves)
COMPARISONS = (("pooled", "raw", "representation gap: pooled exports - raw text (all notes)", "> -1.0"),
               ("provider-only", "raw-provider", "representation gap at the provider: exports - raw text", "-"),
               ("pooled", "provider-only", "pooling gain through exports: pooled - provider-only", "> 0"),
               ("raw", "raw-provider", "pooling gain on raw text: all notes - provider's notes", "-"),
               *((("pooled", f"raw-{site}", f"{site}'s view: pooled pipeline - its own raw-text tagger",
                   "> 0 in every seed") for site in SITES)),
               *(row for party in STACK_PARTIES for row in (
                   (f"stack-{party}", f"local-{party}", f"{party}'s stack - {party} alone (its character tagger)",
                    ">= +1.0 HIPAA, >= +2.0 strict, > 0 every seed" if party in SITES else "-"),
                   (f"stack-{party}", "raw", f"{party}'s stack - raw text (all notes)",
                    "> -0.5 strict" if party == "provider" else "-"),
                   ("raw", f"local-{party}", f"headroom: raw text (all notes) - {party} alone", "-"),
                   (f"stack-{party}", "pooled", f"{party}'s stack - pooled pipeline", "-"),
                   (f"pooled-memory-{party}", "pooled", f"{party}'s PHI memory on the pooled pipeline", "-"))))


def as_counts(per_note: list) -> list[Counts]:
    """Per-note counts as `Counts` (rows.json keeps them as [tp, fp, fn])."""
    return [c if isinstance(c, Counts) else Counts(*c) for c in per_note]


def f1(per_note: list) -> float:
    return micro_f1(as_counts(per_note))


def paired_rows(counts: dict[tuple[int, str, str], list], seeds: list[int], compared=COMPARISONS) -> list[dict]:
    """One row per comparison of `compared` (first, second, title, target) and tagger kind (alone,
    with the pattern layer): each seed's F1 difference in points with its paired 95% interval,
    and their mean with the interval of the mean (the notes resampled once for all seeds: their
    sampling error, not the spread between seeds). `counts[seed, tagger, suffix]` holds the
    tagger's per-note counts ([tp, fp, fn] or `Counts`) on the test notes; comparisons whose
    taggers some seed lacks are left out."""
    rows = []
    for first, second, title, target in compared:
        for suffix in ("", PATTERNS):
            if not all((seed, name, suffix) in counts for seed in seeds for name in (first, second)):
                continue
            pairs = {seed: (as_counts(counts[seed, first, suffix]), as_counts(counts[seed, second, suffix]))
                     for seed in seeds}
            per_seed = {seed: {"difference": 100 * (f1(a) - f1(b)),
                               "interval": [100 * bound for bound in f1_difference_interval([(a, b)])]}
                        for seed, (a, b) in pairs.items()}
            rows.append({"comparison": title, "patterns": bool(suffix), "target": target, "seeds": per_seed,
                         "mean": {"difference": statistics.mean(s["difference"] for s in per_seed.values()),
                                  "interval": [100 * bound for bound in f1_difference_interval(list(pairs.values()))]}})
    return rows


def _cell(value: dict) -> str:
    return points_cell(value["difference"], value["interval"])


def paired_table(rows: list[dict], seeds: list[int], title: str) -> list[str]:
    """The paired differences as a Markdown table, with the width of a single seed's interval; a
    row's "layer" (else its "patterns") names what the taggers' spans were merged with."""
    if not rows:
        return []
    lines = [f"| difference ({title}, points) | tagger | " + " | ".join(f"seed {seed}" for seed in seeds)
             + " | mean over seeds | target |", "|---|---|" + "---:|" * (len(seeds) + 1) + "---|"]
    for row in rows:
        layer = row.get("layer", "+ pattern layer" if row["patterns"] else "alone")
        lines.append(f"| {row['comparison']} | {layer} | "
                     + " | ".join(_cell(row["seeds"][seed]) for seed in seeds)
                     + f" | {_cell(row['mean'])} | {row['target']} |")
    widths = [high - low for row in rows for low, high in [s["interval"] for s in row["seeds"].values()]]
    lines += ["", f"A single seed's paired 95% interval spans {min(widths):.1f} to {max(widths):.1f} points: a "
                  "difference has to be about half that large before these notes tell the two taggers apart."]
    return lines


def note_counts(per_seed: dict, seeds: list[int], measure: str) -> dict[tuple[int, str, str], list]:
    """counts[seed, tagger, suffix] of `measure` for every test row that kept its per-note counts."""
    found = {}
    for seed in seeds:
        for key, row in per_seed[seed].items():
            if key.endswith("@test") and NOTE_COUNTS in row:
                tagger = key.removesuffix("@test")
                suffix = PATTERNS if tagger.endswith(PATTERNS) else ""
                found[seed, tagger.removesuffix(PATTERNS), suffix] = row[NOTE_COUNTS][measure]
    return found


def target_lines(paired: list[dict], growth: list[float]) -> list[str]:
    """Issue #36's targets judged on the headline measure's paired rows (alone and with the
    pattern layer) and the mean growth curve (`growth`: mean F1 for 1 to 4 institutions)."""
    def row(title: str, patterns: bool) -> dict | None:
        return next((r for r in paired if r["comparison"].startswith(title) and r["patterns"] == patterns), None)

    lines = []
    for patterns in (False, True):
        kind = "with the pattern layer" if patterns else "alone"
        gap, gain, raw_gain = (row(title, patterns) for title in ("representation gap: pooled", "pooling gain through",
                                                                   "pooling gain on raw"))
        if gap:
            lines.append(f"- Representation gap ({kind}): pooled exports - raw text = {_cell(gap['mean'])} points "
                         f"(target > -1.0: {'met' if gap['mean']['difference'] > -1.0 else 'MISSED'}).")
        if gain and raw_gain:
            ratio = gain["mean"]["difference"] / raw_gain["mean"]["difference"] if raw_gain["mean"][
                "difference"] > 0 else float("nan")
            excludes_zero = gain["mean"]["interval"][0] > 0
            lines.append(f"- Pooling gain ({kind}): through exports {_cell(gain['mean'])}, on raw text "
                         f"{_cell(raw_gain['mean'])}: {ratio:.2f} x the raw-text gain (target >= 0.8 x with the "
                         f"interval above 0: {'met' if ratio >= 0.8 and excludes_zero else 'MISSED'}).")
        views = [row(f"{site}'s view", patterns) for site in SITES]
        if all(views):
            every = all(seed["difference"] > 0 for view in views for seed in view["seeds"].values())
            lines.append(f"- Site's view ({kind}): the pooled pipeline minus each site's own raw-text tagger: "
                         + ", ".join(f"{site} {_cell(view['mean'])}" for site, view in zip(SITES, views))
                         + f" (target > 0 for every site in every seed: {'met' if every else 'MISSED'}).")
    if growth:
        rising = all(later > earlier for earlier, later in zip(growth, growth[1:]))
        lines.append(f"- Growth curve (alone): {' / '.join(f'{value:.3f}' for value in growth)} for 1 to 4 "
                     f"institutions (target: rises with every institution: {'met' if rising else 'MISSED'}).")
    return lines


def stack_lines(per_seed: dict, done: list[int], paired: dict[str, list[dict]]) -> list[str]:
    """Issue #61's targets on the parties' stacks (their paired rows with the pattern layer and the
    party's PHI memory, both measures) and the operating points: where the stacks chose them on
    their validation notes and what they gave on the test notes."""
    parties = [party for party in STACK_PARTIES if all(f"stack-{party}@test" in per_seed[s] for s in done)]
    if not parties:
        return []

    def row(measure: str, title: str) -> dict:
        return next(r for r in paired[measure] if r["comparison"] == title and r["patterns"])

    lines = ["", "Stacks (`client personalize`): in every stack row and its party's own tagger's, the layer rows "
                 "merge the party's PHI memory (the gold spans of its training notes) with the pattern layer.", "",
             "Targets (issue #61), with the pattern layer and the party's memory on both sides:", ""]
    for site in [party for party in parties if party in SITES]:
        title = f"{site}'s stack - {site} alone (its character tagger)"
        hipaa, strict = row("token_official_hipaa", title), row("entity_strict", title)
        met = (hipaa["mean"]["difference"] >= 1.0 and strict["mean"]["difference"] >= 2.0
               and all(s["interval"][0] > 0 for r in (hipaa, strict) for s in r["seeds"].values()))
        lines.append(f"- {site}'s stack - its best alone: token HIPAA {_cell(hipaa['mean'])}, entity strict "
                     f"{_cell(strict['mean'])} (target >= +1.0 and >= +2.0, every seed's interval above 0: "
                     f"{'met' if met else 'MISSED'}).")
        headroom = f"headroom: raw text (all notes) - {site} alone"
        if any(r["comparison"] == headroom for r in paired["entity_strict"]):
            lines.append(f"  The non-private upper bound (the raw-text tagger on all parties' notes, with the layer) "
                         f"is {_cell(row('token_official_hipaa', headroom)['mean'])} token HIPAA and "
                         f"{_cell(row('entity_strict', headroom)['mean'])} entity strict above {site} alone.")
    if "provider" in parties:
        gap = row("entity_strict", "provider's stack - raw text (all notes)")
        met = gap["mean"]["difference"] > -0.5
        lines.append(f"- The provider's stack - the raw-text tagger on all parties' notes: entity strict "
                     f"{_cell(gap['mean'])} (target > -0.5: {'met' if met else 'MISSED'}).")
    lines += ["", f"Operating points (token HIPAA, official tokenization; mean ± sd over seeds): the pipeline's weight "
                  f"and the threshold chosen on the party's validation notes, by default (best F1, threshold 0.5) and "
                  f"at --min-recall {STACK_MIN_RECALL} (target: precision >= 0.90 on the test notes).", "",
              "| party | weights | default: valid P / R | default: test P / R | threshold at min recall | "
              "valid P / R there | test P / R there | in hindsight: test threshold, P / R |",
              "|---|---|---|---|---|---|---|---|"]
    for party in parties:
        points = [per_seed[s][f"stack-{party}@test"]["operating_point"] for s in done]
        default = [per_seed[s][f"stack-{party}{PATTERNS}@test"] for s in done]
        at_recall = [per_seed[s][f"stack-recall-{party}{PATTERNS}@test"] for s in done]

        def pair(rows: list[dict], prefix: str = "token_official_hipaa_") -> str:
            return " / ".join(spread([r[f"{prefix}{part}"] for r in rows]) for part in ("precision", "recall"))

        lines.append(f"| {party} | {', '.join(str(point['weight']) for point in points)} | "
                     f"{pair([point['valid'] for point in points], '')} | {pair(default)} | "
                     + ", ".join(f"{point['at_recall']['threshold']}"
                                 + ("" if point["at_recall"]["reached"] else " (R not reached)") for point in points)
                     + f" | {pair([point['at_recall'] for point in points], '')} | {pair(at_recall)} | "
                     + hindsight_cell([point.get("test_hindsight") for point in points]) + " |")
    lines += ["", f"In hindsight: the largest threshold whose recall on the test notes themselves reaches "
                  f"{STACK_MIN_RECALL} at the chosen weight, with its test precision (no choice on validation "
                  f"notes can do better at that recall); \"not reached\": the lowest threshold's point."]
    return lines


def hindsight_cell(points: list[dict | None]) -> str:
    """The seeds' thresholds chosen on the test notes and the mean P / R there ("n/a": a row scored
    before it was recorded)."""
    if any(point is None for point in points):
        return "n/a"
    thresholds = ", ".join(f"{p['threshold']}" + ("" if p["reached"] else " (not reached)") for p in points)
    return thresholds + "; " + " / ".join(spread([p[key] for p in points]) for key in ("precision", "recall"))


def finished_seeds(seeds: list[int], runs: Path, stored: Path) -> dict[int, dict]:
    """Every seed the results file `stored` holds (finished in an earlier process, session or on
    another machine, whose run folders may be gone) and every seed among `seeds` under `runs`
    whose full pool is scored (their run folders' rows win)."""
    kept = json.loads(stored.read_text())["seeds"] if stored.exists() else {}
    per_seed = {int(seed): rows for seed, rows in kept.items()}
    for seed in seeds:
        cache = runs / f"seed-{seed}" / "rows.json"
        if cache.exists():
            rows = json.loads(cache.read_text())
            if "pooled@test" in rows:  # the growth curve's smaller pools may be skipped
                per_seed[seed] = rows
    return per_seed


def present_rows(per_seed: dict) -> list[tuple[str, str, str]]:
    """The rows of `ROWS` that every seed has (seeds run before a tagger was added lack it)."""
    return [row for row in ROWS if all(f"{row[1]}@{row[2]}" in rows for rows in per_seed.values())]


def titled(corpus: Corpus, text: str) -> str:
    """`text` (column titles) naming the labels the corpus's entity scores compare."""
    return text.replace("(i2b2 types)", "(source types)") if corpus.entity_key == "source_type" else text


def report(seeds: list[int], results_name: str, corpus_name: str, against: str | None = None) -> None:
    """The tables over the finished `seeds`, with the budget their runs were trained with; with
    `against` (another federation's results name) also each tagger's paired difference to the same
    tagger there (`against_lines`)."""
    corpus = CORPORA[corpus_name]
    runs = REPO / "runs" / results_name
    stored = results_file(results_name, ".json")
    per_seed = finished_seeds(seeds, runs, stored)
    if not per_seed:
        raise SystemExit(f"no finished seed under {runs} or in {stored}")
    done = sorted(per_seed)
    stale = [seed for seed in done if PRIMARY not in per_seed[seed]["pooled@test"]]
    if stale:
        raise SystemExit(f"seeds {stale} were scored before the official i2b2 2014 token HIPAA F1 was recorded: "
                         f"delete their rows.json under {runs} and run them again to rescore them")
    for seed in done:  # runs before the selection and the test notes could be chosen
        per_seed[seed]["budget"].setdefault("selection", "loss")
        per_seed[seed]["budget"].setdefault("test", list(corpus.test))
    budgets = {json.dumps(per_seed[seed]["budget"], sort_keys=True) for seed in done}
    if len(budgets) > 1:
        raise SystemExit(f"seeds {done} were run with different budgets ({sorted(budgets)}); report them apart")
    other = against_seeds(against, done) if against else None
    run = record(run_folders=[runs / f"seed-{seed}" for seed in done],
                 machine=f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}, no GPU",
                 seeds=done, budget=per_seed[done[0]]["budget"], data=corpus_name,
                 # a diagnosis variant's rows live under runs/ only: kept, so the page renders from this file
                 against=against and {"name": against, **({"seeds": other} if ":" in against else {})})
    stamp = {key: run[key] for key in ("date", "commit", "machine", "trained_at") if key in run}
    text, paired, growth = report_text(per_seed, results_name, corpus_name, stamp, against, other)
    print(text)
    stored.parent.mkdir(parents=True, exist_ok=True)
    results_file(results_name, ".md").write_text(text)
    stored.write_text(json_text({**stamp, "corpus": corpus_name, "paired": paired, "seeds": per_seed, "record": run}))
    plot(per_seed, corpus, results_file(results_name, ".png"))
    if growth:
        plot_growth(per_seed, corpus.headline, titled(corpus, COLUMN_TITLES[corpus.headline]),
                    results_file(results_name, "_growth.png"))


def report_text(per_seed: dict[int, dict], results_name: str, corpus_name: str, stamp: dict,
                against: str | None = None, other: dict | None = None) -> tuple[str, dict, list]:
    """The page <results_name>.md of the finished seeds `per_seed` run at `stamp` (date, commit,
    machine; "trained_at" where their run folders recorded it), with `other` the seeds of the run
    `against`; its paired rows by measure and its growth curve's headline means (empty when a pool
    is missing)."""
    corpus = CORPORA[corpus_name]
    done = sorted(per_seed)
    budget = {"p1_patience": per_seed[done[0]]["budget"]["p1"],  # runs before patience was set
              "p3_patience": per_seed[done[0]]["budget"]["p3"], **per_seed[done[0]]["budget"]}
    test_path, test_format, test_split = budget["test"]
    headline = titled(corpus, COLUMN_TITLES[corpus.headline])
    recorded = {key: budget.get(key, default) for key, default in RECORDED_IF_CHANGED.items()}
    representation = {key: recorded[key] for key in REPRESENTATION}
    lines = [f"# Federation benchmark ({corpus.title}, N = {NEIGHBOURS}, d = {representation['repr_size']}"
             + (f", representer {units} units" if (units := representation["representer_units"])
                != REPRESENTATION["representer_units"] else "")
             + "".join(f", initial {kind} noise {representation[f'{kind}_noise']}" for kind in ("input", "output")
                       if representation[f"{kind}_noise"])
             + (f", representer trained on {data}" if (data := representation["representer_data"])
                != REPRESENTATION["representer_data"] else "")
             + (f", representer reading {reads}" if (reads := representation["representer_input"])
                != REPRESENTATION["representer_input"] else "")
             + ")\n",
             f"{stamp['date']}, {commit_text(stamp)}, {stamp['machine']}; seeds {done} (mean ± sd over seeds where "
             "more than one; each 95% bootstrap interval over the scored notes is listed per seed). Test notes: "
             f"`{test_path}` ({test_format}{f', split {test_split}' if test_split else ''}). Headline: {headline}.",
             f"Command: `python experiments/federation.py --corpus {corpus_name} --seeds {' '.join(map(str, done))} "
             f"--p1 {budget['p1']} --p1-patience {budget['p1_patience']} --p3 {budget['p3']} --p3-patience "
             f"{budget['p3_patience']} --tagger-epochs {budget['tagger_epochs']} --patience {budget['patience']} "
             f"--audit-epochs {budget['audit_epochs']} --selection {budget['selection']} "
             + "".join(f"--{key.replace('_', '-')} {value} " for key, value in recorded.items()
                       if value != DEFAULTS_NOW[key])
             + f"--results-name {results_name}" + (f" --against {shlex.quote(against)}" if against else "") + "`.",
             f"Budgets (2-core CPU machine): representer P1 and P2 up to {budget['p1']} epochs each (patience "
             f"{budget['p1_patience']}), P3 up to {budget['p3']} (patience {budget['p3_patience']}; docs/method.md's "
             "reference: 20/20/40, patience 5/5/10), their best epochs picked by validation "
             f"{'PHI F1' if budget['selection'] == 'f1' else 'loss (docs/method.md)'}; taggers at most "
             f"{budget['tagger_epochs']} epochs, patience {budget['patience']}, each stopping on and keeping its best "
             f"validation {MONITOR_TITLES[budget.get('monitor', 'val_f1')]}; audit {budget['audit_epochs']} epochs.\n",
             "| tagger | scored on | " + titled(corpus, score_header()) + " |",
             "|---|---|" + "---|" * len(SCORE_COLUMNS)]
    for title, name, split in present_rows(per_seed):
        for suffix in ("", PATTERNS):
            if all(f"{name}{suffix}@{split}" in per_seed[seed] for seed in done):
                rows = [per_seed[seed][f"{name}{suffix}@{split}"] for seed in done]
                lines.append(f"| {title}{' + pattern layer' if suffix else ''} | {split} | "
                             + " | ".join(over_seeds(rows, key) for key in SCORE_COLUMNS) + " |")
    audits = [per_seed[seed]["audit"] for seed in done if "audit" in per_seed[seed]]
    if audits:
        lines += ["", "| audit of the representer | value |", "|---|---|",
                  f"| verdicts | {', '.join(a['verdict'] for a in audits)} |",
                  f"| fresh adversary held-out accuracy | {spread([a['fresh_accuracy'] for a in audits])} |",
                  f"| lookup attack (A2) rate | {spread([a['lookup_rate'] for a in audits])} |"]
    paired = {}
    for key, measure in MEASURES.items():
        counts = note_counts(per_seed, done, measure)
        paired[measure] = paired_rows(counts, done)
        title = titled(corpus, COLUMN_TITLES[key])
        table = paired_table(paired[measure], done, title)
        if table:
            lines += ["", f"Paired differences on the test notes, {title}: each cell the F1 difference in points "
                          "[paired 95% percentile bootstrap interval over the notes, 1000 resamples]; the mean over "
                          "seeds resamples the notes once for all seeds.", "", *table]
    growth = [statistics.mean(per_seed[s][f"{name}@test"][corpus.headline] for s in done) for name in GROWTH] \
        if all(f"{name}{suffix}@test" in per_seed[s] for s in done for name in GROWTH for suffix in ("", PATTERNS)) \
        else []
    if against:
        lines += against_lines(per_seed, other, against, corpus)
    targets = target_lines(paired[MEASURES[corpus.headline]], growth)
    if targets:
        lines += ["", f"Targets (issue #36) on the headline {headline}:", "", *targets]
    if growth:
        lines += growth_lines(per_seed, done, corpus.headline, headline)
    lines += stack_lines(per_seed, done, paired)
    text = "\n".join(lines) + "\n" + f"\n![F1 per tagger]({results_name}.png)\n" \
        + (f"\n![growth]({results_name}_growth.png)\n" if growth else "")
    return text, paired, growth


def against_seeds(against: str, seeds: list[int]) -> dict[int, dict]:
    """The finished seeds of `against`: a federation's results name, or NAME:VARIANT, a variant of
    representation_diagnosis.py run on that federation's seeds (its tagger on every party's exports
    under one change), whose rows stand for the full pool "pooled"."""
    name, _, variant = against.partition(":")
    if not variant:
        return finished_seeds(seeds, REPO / "runs" / name, results_file(name, ".json"))
    found = {}
    for seed in seeds:
        cache = REPO / "runs" / name / f"seed-{seed}" / "diagnosis" / "rows.json"
        rows = json.loads(cache.read_text()) if cache.exists() else {}
        if f"{variant}@test" in rows:
            found[seed] = {f"pooled{suffix}@test": rows[f"{variant}{suffix}@test"] for suffix in ("", PATTERNS)
                           if f"{variant}{suffix}@test" in rows}
    return found


def against_lines(per_seed: dict, other: dict, other_name: str, corpus: Corpus) -> list[str]:
    """Each tagger's paired F1 difference (this run minus the same tagger of the federation
    `other_name`, whose finished seeds are `other`) on the seeds both hold, on both measures: the
    same notes, seeds and training data on both sides, so a difference is what the runs' one
    setting changes (e.g. the taggers' --monitor)."""
    seeds = sorted(set(per_seed) & set(other))
    if not seeds:
        raise SystemExit(f"{other_name} holds none of seeds {sorted(per_seed)}")
    lines = []
    for key, measure in MEASURES.items():
        mine, theirs = note_counts(per_seed, seeds, measure), note_counts(other, seeds, measure)
        counts = {**mine, **{(seed, f"{name} ({other_name})", suffix): c for (seed, name, suffix), c in theirs.items()}}
        names = sorted({name for _, name, _ in mine} & {name for _, name, _ in theirs})
        rows = paired_rows(counts, seeds, [(name, f"{name} ({other_name})", f"{name}: this run - {other_name}", "-")
                                           for name in names])
        title = titled(corpus, COLUMN_TITLES[key])
        lines += ["", f"Against `{other_name}` (the same taggers there, seeds {seeds}), {title}:", "",
                  *paired_table(rows, seeds, title)]
    return lines


def growth_lines(per_seed: dict, done: list[int], key: str, title: str) -> list[str]:
    """The growth table: each pool of 1 to 4 institutions, its training sentences, seconds per
    epoch and the F1 `key` on the test notes (alone and with the pattern layer), mean ± sd over seeds."""
    lines = ["", "Growth curve: the pooled tagger as institutions join (test notes; the server's trainer, median "
                 "seconds per epoch on this CPU)", "",
             f"| institutions | pool | training sentences | s per epoch | {title} | with the pattern layer |",
             "|---:|---|---:|---:|---|---|"]
    for count, name in enumerate(GROWTH, 1):
        rows = [per_seed[seed][f"{name}@test"] for seed in done]
        merged = [per_seed[seed][f"{name}{PATTERNS}@test"] for seed in done]
        lines.append(f"| {count} | {' + '.join(POOLS[name])} | {rows[0]['sentences']:,} | "
                     f"{spread([r['epoch_seconds'] for r in rows])} | {spread([r[key] for r in rows])} | "
                     f"{spread([r[key] for r in merged])} |")
    return lines


def plot_growth(per_seed: dict, key: str, title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(6, 4))
    counts = range(1, len(GROWTH) + 1)
    for suffix, label, color in (("", "pooled exports, alone", "C1"), (PATTERNS, "with the pattern layer", "C0")):
        for seed, rows in per_seed.items():
            axes.plot(counts, [rows[f"{name}{suffix}@test"][key] for name in GROWTH], marker="o", color=color,
                      alpha=0.7, label=label if seed == min(per_seed) else None)
    for name, style in (("raw", "--"), ("raw-provider", ":")):
        if all(f"{name}@test" in rows for rows in per_seed.values()):
            axes.axhline(statistics.mean(rows[f"{name}@test"][key] for rows in per_seed.values()), color="grey",
                         linestyle=style, label=f"raw text, {'all notes' if name == 'raw' else 'provider only'}")
    axes.set(xlabel="institutions pooled", ylabel=title, xticks=list(counts))
    axes.legend(fontsize="small")
    save_figure(figure, path, dpi=100)


def plot(per_seed: dict, corpus: Corpus, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(10, 4))
    shown = present_rows(per_seed)
    labels = [f"{name}\n({split})" for _, name, split in shown]
    for offset, metric in ((-0.2, PRIMARY), (0.2, "entity_strict_f1")):
        means = [statistics.mean(rows[f"{name}@{split}"][metric] for rows in per_seed.values())
                 for _, name, split in shown]
        axes.bar([i + offset for i in range(len(shown))], means, 0.4, label=COLUMN_TITLES[metric])
    axes.set_xticks(range(len(shown)), labels, fontsize="x-small")
    axes.set(ylabel="F1", ylim=(0, 1), title=corpus.title)
    axes.legend(fontsize="small")
    save_figure(figure, path, dpi=100)


def run_seeds(run: Callable, args) -> dict[int, object]:
    """`run(seed, args)` of every seed of `args.seeds` within `args.time_budget` seconds of
    training; when it runs out, exit RESUMABLE_EXIT_STATUS (a rerun resumes where it stopped)."""
    try:
        with time_budget(args.time_budget):
            return {seed: run(seed, args) for seed in args.seeds}
    except TimeBudgetExhausted as stopped:
        print(f"resumable: {stopped}", flush=True)
        sys.exit(RESUMABLE_EXIT_STATUS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=CORPORA, default="physionet")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--p1", type=int, default=20, help="most epochs of P1 and of P2")
    parser.add_argument("--p1-patience", type=int, default=5)
    parser.add_argument("--p3", type=int, default=40, help="most epochs of P3")
    parser.add_argument("--p3-patience", type=int, default=10)
    parser.add_argument("--tagger-epochs", type=int, default=25, help="most epochs of every tagger")
    parser.add_argument("--patience", type=int, default=5, help="the taggers' early-stopping patience")
    parser.add_argument("--audit-epochs", type=int, default=20)
    parser.add_argument("--selection", choices=SELECTIONS, default="loss",
                        help="how P1 and P3 pick their best epoch: validation loss (docs/method.md) or PHI F1")
    parser.add_argument("--monitor", choices=MONITORS, default=DEFAULTS_NOW["monitor"],
                        help="what every tagger's early stopping and epoch choice watch (validation loss, as the "
                             "server's pooled runs; PHI F1, the runs before it was an option; exact-tag F1)")
    parser.add_argument("--pooled-units", type=int, default=DEFAULTS_NOW["pooled_units"],
                        help="LSTM units per direction of the server's pooled taggers (the server's default, "
                             "server.pooled.POOLED_UNITS)")
    parser.add_argument("--repr-size", type=int, default=DEFAULTS_NOW["repr_size"],
                        help="the representation size d (docs/method.md evaluates 50, 100, 300)")
    parser.add_argument("--representer-units", type=int, default=DEFAULTS_NOW["representer_units"],
                        help="LSTM units per direction of the representer's BiLSTM (docs/method.md: 128)")
    parser.add_argument("--input-noise", type=float, default=DEFAULTS_NOW["input_noise"],
                        help="initial std of the representer's input noise per dimension (default: the "
                             "representer's own)")
    parser.add_argument("--output-noise", type=float, default=DEFAULTS_NOW["output_noise"],
                        help="initial std of the representer's output noise per dimension (default: the "
                             "representer's own)")
    parser.add_argument("--representer-data", choices=REPRESENTER_DATA, default=DEFAULTS_NOW["representer_data"],
                        help="what the representer trains on: the provider's training notes, or them and a copy of "
                             "each pseudonymized as `client export` pseudonymizes (validation on the notes as is)")
    parser.add_argument("--representer-input", choices=REPRESENTER_INPUT, default=DEFAULTS_NOW["representer_input"],
                        help="what the representer reads of each token: its embedding, or that and a convolution "
                             "over its characters (an export's tokens are pseudonymized first)")
    parser.add_argument("--skip", nargs="+", choices=SKIPPABLE, default=[],
                        help="stages to leave out (a later run without --skip adds them)")
    parser.add_argument("--test", type=Path, help="the held-out notes to score (default: the corpus's test notes)")
    parser.add_argument("--test-format", help="format of --test (corpus.formats)")
    parser.add_argument("--test-split", help="named split of --test")
    parser.add_argument("--results-name", help="stem of the result files and folder under runs/ (default: "
                                               "federation_reference for PhysioNet, federation_<corpus> otherwise)")
    parser.add_argument("--time-budget", type=float, help="seconds this process may train: stop after the last "
                                                          "epoch that fits, exit 75; a rerun resumes")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--against", metavar="NAME[:VARIANT]",
                        help="also report each tagger's paired difference to the same tagger of the federation "
                             "NAME (its results or runs), or to its full pool against NAME's diagnosis VARIANT "
                             "(representation_diagnosis.py)")
    args = parser.parse_args()
    corpus = CORPORA[args.corpus]
    if args.test is not None and not args.test_format:
        parser.error("--test needs --test-format")
    args.test = [os.path.relpath(args.test.resolve(), REPO.parent), args.test_format, args.test_split] if args.test \
        else list(corpus.test)
    args.results_name = args.results_name or (
        "federation_reference" if args.corpus == "physionet" else f"federation_{args.corpus}")
    if not args.report_only:
        if not corpus.notes.exists():
            raise SystemExit(f"{corpus.notes} is absent: the benchmark needs the shared {args.corpus} corpus")
        run_seeds(run_seed, args)
    report(args.seeds, args.results_name, args.corpus, args.against)


if __name__ == "__main__":
    main()
