"""Where does the shared representation lose? Each row changes one thing against the federation's
default and trains the server's tagger on every party's exports (the pooled notes), scored on the
federation's test notes: F1 minus the raw-text tagger on the same notes, same seed, with paired
bootstrap intervals.

    python experiments/representation_diagnosis.py --corpus meddocan --seeds 0 1 2 [--variants NAME ...]
        [--time-budget SECONDS]
    python experiments/representation_diagnosis.py --corpus meddocan --seeds 0 1 2 --report-only

Training prints the table of its own seeds and variants and writes it only under --results-name;
--report-only writes the page (<federation>_diagnosis unless --results-name) from every seed named.

Reads the finished federation seeds (runs/federation_<corpus>/seed-S, or --federation NAME): their
representer, keys, embeddings and the rows of the default pooled tagger and the raw-text tagger.
Variants that keep the representer (`VARIANTS`):
  noise off at export     the representer's output noise off while exporting (an ablation, not a
                          product option: noiseless vectors are what the lookup attack reads exactly)
  3 export draws          every party exports its notes three times (fresh surrogates and noise each
                          time), the server pools all draws: augmentation the server can ask for
                          (three contributions per party: copies of a validation sentence train)
  client export --draws 3 the same augmentation through the product path: one contribution per party
                          of 3 draws, each sentence's copies held out for validation together
  no pseudonymization at export   groups at N = 1 (surrogates ignore N): the gold PHI tokens reach
                          the representer as they are (an ablation: it splits the loss into what
                          pseudonymization and what the representation costs)
  tagger 256 units        the pooled tagger with 256 LSTM units per direction (default 128)
  tagger word dropout 0.2 the pooled tagger zeroes each token's vector with probability 0.2 in
                          training (`Tagger`'s word dropout): it must read PHI from the context too,
                          where the exports' surrogates and the test notes' real PHI look alike
  tagger every epoch      the pooled tagger trained for every one of --tagger-epochs, no early stop
                          (the default stops after --patience epochs without a better validation
                          PHI F1, which counts PHI tokens found, not their type; the best epoch by
                          that F1 is kept)
  tagger stops on PHI F1  the pooled tagger's early stopping and epoch choice on the validation
                          binary PHI F1 (for a federation run with another --monitor)
  tagger stops on tag F1  the same on the validation exact-tag F1 (type and B/I right)
  tagger stops on validation loss   the same on the validation loss
  client export --draws 3, tagger stops on validation loss   both changes at once
  raw text, tagger stops on validation loss   not an export: the raw-text tagger on all notes
                          (as the federation's) stopping on its validation loss, the baseline
                          the monitor variants compare with under `--baseline` (report)
  representer after P1    the representer before adversarial training (P1 only)
  surrogates at export    the "surrogates" scheme as the code has it now (a federation seed exported
                          under "groups" is diagnosed under "groups" otherwise)
  groups at export        the "groups" scheme at N = 100 (issue #37: the utility of "surrogates", the
                          default since 2026-11-27, against the scheme it replaced, for a federation
                          seed exported under "surrogates")
  groups N500 at export   the same at N = 500
  surrogates at export, tagger 256 units   both changes at once (256 units: the server's default
                          for a few hours on 2026-11-27, 128 again since this row)
  raw text, tagger 256 units   the raw-text tagger with the pooled tagger's capacity (the
                          like-for-like baseline of the row above, under `--baseline`)
  surrogates at export, tagger 25 epochs   "surrogates at export" trained on to at most 25 epochs
                          (same patience) from its 10-epoch run's checkpoint, on the same exports
  raw text, tagger 25 epochs   the federation's raw-text tagger trained on the same way
  raw text, tagger reads characters   the raw-text tagger reading each token's characters too
                          (`deidpool train tagger --chars`): the like-for-like baseline of a
                          federation whose representer reads them (`--representer-input`)
  site_a raw text, tagger reads characters (and site_b, site_c)   a site's own raw-text
                          tagger reading characters: the site's view against the strongest tagger
                          it can train alone (under `--baseline`)
Variants that retrain the representer (epoch selection by validation F1, other representation sizes)
are federation runs of their own (`federation.py --selection f1 --results-name ...`), compared
with --baseline in this report. Variants that change only the pooled tagger train on the
federation seed's own contributions (`same_exports`). Runs live in the federation seed folder under
diagnosis/<variant>, each with its run record (results_files.write_run_record); the table goes to
results/federation/<federation>_diagnosis.{md,json}, its record naming the commits that trained the
seed folders and the variants' folders it reports.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import federation
from deidpool.client.export import DEFAULT_NEIGHBOURS
from deidpool.corpus.metrics import COLUMN_TITLES
from deidpool.federation import (
    PooledSettings,
    Provider,
    export_party,
    party_keys,
    pooling_server_key,
    train_pooled_round,
)
from results_files import RUN_RECORD, commit_text, record, results_file, seeds_as_numbers, write_run_record

REPO = federation.REPO


@dataclass(frozen=True)
class Variant:
    """One change against the federation's default export and pooled tagger."""
    noise: bool = True  # the representer's output noise while exporting
    draws: int = 1  # draws per party, pooled together
    one_export: bool = False  # the draws in one contribution (`client export --draws`), else one export each
    units: int | None = None  # the pooled tagger's LSTM units per direction (None: the federation's)
    word_dropout: float = 0.0  # the pooled tagger's word dropout (`Tagger`)
    early_stopping: bool = True  # the pooled tagger stops after --patience epochs without improvement
    monitor: str | None = None  # what the tagger's early stopping watches (TaggerTraining; None: the federation's)
    text: bool = False  # not an export: a raw-text tagger
    kind: str = "raw"  # which (federation.TEXT_TAGGERS): on all parties' notes, or one party's
    chars: bool = False  # that tagger reads each token's characters too
    neighbours: int = DEFAULT_NEIGHBOURS  # the export's N (1: no pseudonymization)
    scheme: str | None = None  # the export's pseudonymization scheme (None: the federation seed's own, `seed_scheme`)
    representer: str = "representer.keras"  # the run's model file the bundle carries
    epochs: int | None = None  # its tagger's most epochs (None: --tagger-epochs)
    continues: str | None = None  # the variant (or "raw", the federation's raw-text tagger) whose exports and
    # tagger run it carries on to `epochs`: a checkpointed run resumed with more epochs is the longer run exactly


VARIANTS = {"noise off at export": Variant(noise=False), "3 export draws": Variant(draws=3),
            "client export --draws 3": Variant(draws=3, one_export=True),
            "tagger 256 units": Variant(units=256), "tagger word dropout 0.2": Variant(word_dropout=0.2),
            "tagger every epoch": Variant(early_stopping=False),
            "tagger stops on PHI F1": Variant(monitor="val_f1"),
            "tagger stops on tag F1": Variant(monitor="val_tag_f1"),
            "tagger stops on validation loss": Variant(monitor="val_loss"),
            "client export --draws 3, tagger stops on validation loss": Variant(draws=3, one_export=True,
                                                                                monitor="val_loss"),
            "raw text, tagger stops on validation loss": Variant(text=True, monitor="val_loss"),
            "representer after P1": Variant(representer="representer_p1.keras"),
            "no pseudonymization at export": Variant(neighbours=1, scheme="groups"),
            "surrogates at export": Variant(scheme="surrogates"),
            "groups at export": Variant(scheme="groups"),
            "groups N500 at export": Variant(scheme="groups", neighbours=500),
            "surrogates at export, tagger 256 units": Variant(scheme="surrogates", units=256),
            "raw text, tagger 256 units": Variant(text=True, units=256),
            "surrogates at export, tagger 25 epochs": Variant(scheme="surrogates", epochs=25,
                                                              continues="surrogates at export"),
            "raw text, tagger 25 epochs": Variant(text=True, epochs=25, continues="raw"),
            "raw text, tagger reads characters": Variant(text=True, chars=True),
            **{f"{site} raw text, tagger reads characters": Variant(text=True, kind=f"raw-{site}", chars=True)
               for site in federation.SITES}}
DEFAULT = "default (the federation's pooled tagger)"


def folder_name(variant: str) -> str:
    return variant.replace(" ", "-")


def variant_provider(seed_dir: Path, variant: Variant, out: Path) -> Provider:
    """The provider whose signed bundle the variant exports with: the federation seed's own, or
    one whose run is a copy of the seed's representer run carrying another of its model files
    (its bundle published in `out`)."""
    provider = federation.seed_provider(seed_dir)
    if variant.representer == "representer.keras":
        return provider
    run = out / "representer"
    if not (out / "bundle.tar").exists():
        (run / "models").mkdir(parents=True, exist_ok=True)
        shutil.copy(provider.run / "config.json", run / "config.json")
        shutil.copy(provider.run / "models" / variant.representer, run / "models" / "representer.keras")
    return replace(provider, run=run, bundle_path=out / "bundle.tar")


def seed_scheme(seed_dir: Path) -> str:
    """The pseudonymization scheme the federation seed exported with (its provider contribution's
    header): the default every variant is compared with, whatever the export default is now."""
    from deidpool.contribution.container import PSEUDONYMIZATION_SCHEMES, read_header

    recorded = read_header(seed_dir / "contributions" / "provider.dpc").pseudonymization
    return next(name for name, value in PSEUDONYMIZATION_SCHEMES.items() if value == recorded)


def variant_folders(seed_dir: Path, name: str) -> list[Path]:
    """The run folders the variant `name`'s rows were trained in: its own under the federation
    seed folder `seed_dir`, and the variant's it `continues` (the seed folder's own raw-text
    tagger is the seed folder's)."""
    continues = VARIANTS[name].continues if name in VARIANTS else None
    return [seed_dir / "diagnosis" / folder_name(other) for other in (name, continues) if other not in (None, "raw")]


def carry_on(seed_dir: Path, variant: Variant, out: Path) -> None:
    """Start the variant's folder `out` as a copy of the run it `continues` (its exports and
    tagger run, not its published pipeline nor its run record), unless its tagger is started
    already."""
    if variant.continues is None or (out / "tagger").exists():
        return
    if variant.continues == "raw":
        shutil.copytree(seed_dir / "taggers" / "raw", out / "tagger")
    else:
        shutil.copytree(seed_dir / "diagnosis" / folder_name(variant.continues), out,
                        ignore=shutil.ignore_patterns("pipeline.tar", RUN_RECORD), dirs_exist_ok=True)


def same_exports(variant: Variant) -> bool:
    """Whether the variant exports as the federation did (it changes only the pooled tagger), so
    that it trains on the federation seed's own contributions: paired with the default up to the
    tagger's training alone."""
    default = Variant()
    return all(getattr(variant, name) == getattr(default, name)
               for name in ("noise", "draws", "one_export", "neighbours", "scheme", "representer"))


def tagger_settings(variant: Variant, budget: dict) -> tuple[str, int]:
    """(monitor, LSTM units) of the variant's tagger: its own, else those of the federation seed's
    `budget` (which names them only where they are not the values of the runs before them)."""
    monitor, units = (budget.get(key, federation.RECORDED_IF_CHANGED[key]) for key in ("monitor", "pooled_units"))
    return variant.monitor or monitor, variant.units or units


def variant_rows(corpus: federation.Corpus, seed_dir: Path, seed: int, name: str, variant: Variant, documents: dict,
                 embeddings: tuple, args, budget: dict) -> dict:
    """Export every party's notes as `variant` says, train the server's tagger on all of them
    (both through `deidpool.federation`, as the federation does) and return its rows on the test
    notes (alone and with the pattern layer); a `text` variant trains the raw-text tagger instead,
    on the federation seed's `budget` (`tagger_settings`)."""
    monitor, units = tagger_settings(variant, budget)
    out = seed_dir / "diagnosis" / folder_name(name)
    write_run_record(out, seed=seed, variant=name, **({"continues": variant.continues} if variant.continues else {}))
    carry_on(seed_dir, variant, out)
    if variant.text:
        if variant.epochs:
            args = argparse.Namespace(**{**vars(args), "tagger_epochs": variant.epochs})
        return federation.text_tagger_rows(corpus, seed_dir, seed, name, documents, (), embeddings, args,
                                           kind=variant.kind,
                                           run_dir=out / "tagger", monitor=monitor, chars=variant.chars,
                                           lstm_units=variant.units or federation.TEXT_TAGGER_UNITS)
    from deidpool.client.export import ExportSettings
    from deidpool.representer.tagger_runs import split_documents

    _, vectors = embeddings
    epochs = variant.epochs or args.tagger_epochs
    key_dir = seed_dir / "keys"
    provider = variant_provider(seed_dir, variant, out)
    bundle = provider.bundle()
    server_key = pooling_server_key(key_dir)
    provider_split = split_documents(documents["provider"], 0.1, seed)
    contributions, scheme = [], variant.scheme or seed_scheme(seed_dir)
    for institution in federation.PARTIES:
        party = party_keys(key_dir / institution, institution)
        if same_exports(variant):  # the federation's own contribution, named as it named it
            contributions.append(party.contribution(seed_dir / "contributions" / f"{institution}.dpc"))
            continue
        for draw in range(1 if variant.one_export else variant.draws):
            path = out / "contributions" / f"{institution}-{draw}.dpc"
            if not path.exists():
                federation.progress(f"seed {seed}, {name}: {institution} exports its notes (export {draw + 1})")
                settings = ExportSettings(neighbours=variant.neighbours, scheme=scheme, language=corpus.language,
                                          draws=variant.draws if variant.one_export else 1, noise=variant.noise)
                export_party(federation.party_notes(documents, provider_split, institution), bundle, vectors, path,
                             party, settings, server_key=server_key.public_key(), progress=False)
            contributions.append(party.contribution(path, f"{institution}-{draw}"))
    federation.progress(f"seed {seed}, {name}: the server trains the pooled tagger")
    pooled = train_pooled_round(contributions, server_key, bundle, out / "tagger", out / "pipeline.tar",
                                tags=list(bundle.tags), signing_key=provider.keys.private(),
                                settings=PooledSettings(max_epochs=epochs, lstm_units=units, monitor=monitor,
                                                        patience=args.patience if variant.early_stopping else epochs,
                                                        seed=seed, word_dropout=variant.word_dropout))
    found = federation.pipeline_predictions(pooled.pipeline, provider, {"test": documents["test"]}, vectors)["test"]
    rows = federation.test_rows(corpus, documents["test"], found, {"epochs": pooled.training["epochs"],
                                                                   "best_epoch": pooled.training["best_epoch"],
                                                                   "sentences": pooled.sentences})
    return {f"{name}{suffix}@test": row for suffix, row in rows.items()}


def run_seed(seed: int, args) -> dict:
    """The variants' rows of one federation seed (kept in its diagnosis/rows.json) beside its
    default pooled and raw-text rows. The variants can run once the seed has published its
    representer; the rows are returned once it has scored its raw-text and pooled taggers."""
    from deidpool.corpus.formats import read_corpus

    corpus = federation.CORPORA[args.corpus]
    seed_dir = REPO / "runs" / args.federation / f"seed-{seed}"
    federation_rows = seed_dir / "rows.json"
    done = json.loads(federation_rows.read_text()) if federation_rows.exists() else {}
    cache = seed_dir / "diagnosis" / "rows.json"
    rows = json.loads(cache.read_text()) if cache.exists() else {}
    missing = [] if args.report_only else [name for name in args.variants if f"{name}@test" not in rows]
    if missing:
        if "budget" not in done or not (seed_dir / "bundle.tar").exists():
            raise SystemExit(f"federation seed {seed} has not published its representer yet ({seed_dir})")
        documents = {party: read_corpus(corpus.notes, corpus.fmt, split=party) for party in federation.PARTIES}
        path, fmt, split = done["budget"]["test"]
        documents["test"] = read_corpus(REPO.parent / path, fmt, split=split)
        embeddings = federation.provider_embeddings(corpus, seed_dir, documents["provider"], seed)
        for name in missing:
            rows.update(variant_rows(corpus, seed_dir, seed, name, VARIANTS[name], documents, embeddings, args,
                                     done["budget"]))
            cache.write_text(json.dumps(rows, indent=1) + "\n")
    done = json.loads(federation_rows.read_text())
    if not all(f"{name}@test" in done for name in ("raw", "pooled")):
        raise SystemExit(f"federation seed {seed} has not scored its raw-text and pooled taggers yet ({seed_dir}); "
                         "the variants' rows are kept: rerun then")
    return {**rows, **{f"{DEFAULT}{suffix}@test": done[f"pooled{suffix}@test"] for suffix in ("", federation.PATTERNS)},
            **{f"raw{suffix}@test": done[f"raw{suffix}@test"] for suffix in ("", federation.PATTERNS)}}


def like_for_like(names: list[str]) -> list[tuple[str, str]]:
    """(variant, text variant) pairs among `names` whose taggers are alike (units, epochs, stopping)
    but for the text the tagger reads: the gap of a pooled tagger that is not the default's."""
    def tagger(variant: Variant) -> tuple:
        return variant.units, variant.epochs, variant.monitor, variant.early_stopping, variant.kind, variant.chars

    variants = {name: VARIANTS[name] for name in names if name in VARIANTS}
    texts = {tagger(variant): name for name, variant in variants.items() if variant.text}
    return [(name, texts[tagger(variant)]) for name, variant in variants.items()
            if not variant.text and tagger(variant) in texts]


def report(per_seed: dict[int, dict], args, write: bool = True) -> str:
    """Each of `args.variants` that every seed has against the raw-text tagger (or `args.baseline`)
    and against the default, on both measures; written to the results files when `write`."""
    seeds = sorted(per_seed)
    names = [DEFAULT, *(name for name in VARIANTS
                        if name in args.variants and all(f"{name}@test" in per_seed[s] for s in seeds))]
    if args.baseline not in ("raw", *names):
        raise SystemExit(f"--baseline {args.baseline!r} has no rows in seeds {seeds}")
    baseline = "raw text" if args.baseline == "raw" else args.baseline
    # the default's target: the representation gap's against all notes' raw text, the site's view's against a site's
    site_view = args.baseline in VARIANTS and VARIANTS[args.baseline].kind != "raw"
    compared = [(name, args.baseline, f"{name} - {baseline}", ("> 0" if site_view else "> -1.0") if name == DEFAULT
                 else "-") for name in names if name != args.baseline]
    compared += [(name, DEFAULT, f"{name} - default", "-") for name in names[1:] if not VARIANTS[name].text]
    like = [(name, text, f"{name} - {text}", "-") for name, text in like_for_like(names) if text != args.baseline]
    compared += like
    command = (f"python experiments/representation_diagnosis.py --corpus {args.corpus} --federation "
               f"{args.federation} --seeds {' '.join(map(str, seeds))} --report-only"
               + (f" --variants {' '.join(shlex.quote(name) for name in names[1:])}"
                  if set(names[1:]) != set(VARIANTS) else "")
               + (f" --baseline {shlex.quote(args.baseline)}" if args.baseline != "raw" else "")
               + (f" --results-name {args.results_name}" if args.results_name else ""))
    paired = {measure: federation.paired_rows(federation.note_counts(per_seed, seeds, measure), seeds, compared)
              for measure in federation.MEASURES.values()}
    folders = []  # the federation's seed folders and the variants' folders in them
    for seed in seeds:
        seed_dir = REPO / "runs" / args.federation / f"seed-{seed}"
        folders += [seed_dir, *(folder for name in names[1:] for folder in variant_folders(seed_dir, name))]
    data = {"paired": paired, "record": record(run_folders=folders, command=command, corpus=args.corpus,
                                               federation=args.federation, seeds=seeds, baseline=baseline,
                                               like_for_like=bool(like))}
    text = page(data)
    if not write:
        return text
    name = args.results_name or f"{args.federation}_diagnosis"
    results_file(name, ".md").parent.mkdir(parents=True, exist_ok=True)
    results_file(name, ".md").write_text(text)
    results_file(name, ".json").write_text(json.dumps(data, indent=1) + "\n")
    return text


def page(data: dict) -> str:
    """The page of results JSON `data`: its paired rows and the run's record (date, commit,
    "trained_at" where its run folders recorded it, command, corpus, federation, seeds, the
    baseline's title and whether rows compare like for like)."""
    run, seeds = data["record"], data["record"]["seeds"]
    corpus = federation.CORPORA[run["corpus"]]
    lines = [f"# Where the representation loses ({corpus.title}, federation `{run['federation']}`)\n",
             f"{run['date']}, {commit_text(run)}; seeds {seeds}. Command: `{run['command']}`. Each row: the "
             "server's tagger trained on every party's exports under one change, scored on the test notes, minus the "
             f"{run['baseline']} tagger on the same notes (or minus the default"
             + (", or minus the raw-text tagger trained as the row's own: the same units and epochs"
                if run["like_for_like"] else "")
             + "); cells: the F1 difference in points [paired 95% bootstrap interval over the notes].\n"]
    for key, measure in federation.MEASURES.items():
        title = federation.titled(corpus, COLUMN_TITLES[key])
        lines += ["", f"## {title}", "", *federation.paired_table(seeds_as_numbers(data["paired"][measure]), seeds,
                                                                  title)]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=federation.CORPORA, default="meddocan")
    parser.add_argument("--federation", help="results name of the federation runs (default: as federation.py)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--tagger-epochs", type=int, default=25)
    parser.add_argument("--patience", type=int, default=5)
    parser.add_argument("--time-budget", type=float, help="seconds this process may train; exit 75, a rerun resumes")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--results-name", help="the results files' name (default: <federation>_diagnosis)")
    parser.add_argument("--baseline", default="raw", help="the row every variant is compared with: the "
                                                           "federation's raw-text tagger, or a text variant")
    args = parser.parse_args()
    args.federation = args.federation or ("federation_reference" if args.corpus == "physionet"
                                          else f"federation_{args.corpus}")
    # a training process writes its page only under a name of its own: the default page holds every seed's
    # rows, which a process training some seeds or variants would replace by its own
    written = args.report_only or args.results_name is not None
    print(report(federation.run_seeds(run_seed, args), args, write=written))
    if not written:
        print("(not written to the results files: rerun with --report-only, or train with --results-name)")


if __name__ == "__main__":
    main()
