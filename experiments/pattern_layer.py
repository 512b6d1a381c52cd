"""The high-precision pattern layer (client/patterns.py) beside the tagger, on PhysioNet (issue
#18, section 2): each pattern's precision and recall on the training splits (provider, site_a,
site_b, site_c: where the patterns were written), then on `test` the patterns alone, the tagger
alone and both merged (`client deidentify --patterns`), overall and per i2b2 category, scored
with the official i2b2 2014 token HIPAA measure and its bootstrap interval over notes.

The taggers are those of an already trained run (default: the paper's reference budget,
runs/adversarial_reference/three-phase_N100_raw_export): its representer published with the
tagger retrained on its exports (what a pooling server publishes; the primary row) and with the
jointly trained tagger, each as a signed pipeline (a throwaway key) read by `deidpool.client.deidentify`,
whose representer runs without noise (adversarial_reference.md scores the same taggers with the
noise drawn, so its numbers differ by up to 2 points).

    python experiments/pattern_layer.py [--run RUN_DIR] [--results-name pattern_layer]

Per-category rows keep only the spans of one category on both sides (a token the tagger finds
under another label is a miss there and a false positive of that label); "found" is the recall
of the category's gold tokens by a prediction of any label, what redaction needs.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from datetime import date
from pathlib import Path

from deidpool.representer.threads import configure_threads

configure_threads()

import numpy as np  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402

from deidpool.client.deidentify import find_phi  # noqa: E402
from deidpool.client.patterns import DEFAULT_PATTERNS, PATTERNS, with_patterns  # noqa: E402
from deidpool.corpus.categories import phi_type  # noqa: E402
from deidpool.corpus.document import Document  # noqa: E402
from deidpool.corpus.errors import CorpusWarning  # noqa: E402
from deidpool.corpus.formats import read_corpus  # noqa: E402
from deidpool.corpus.i2b2_official import is_hipaa, phi_tokens  # noqa: E402
from deidpool.corpus.metrics import (  # noqa: E402
    COLUMN_TITLES,
    LEVEL,
    RESAMPLES,
    Counts,
    evaluate_corpus,
    format_score,
    official_token_counts,
    score_row,
)
from deidpool.representer.bundle import open_bundle, publish_pipeline, publish_run  # noqa: E402
from results_files import SCORE_COLUMNS, git_commit, score_header, write_results  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "physionet-deid"
TRAIN_SPLITS = ("provider", "site_a", "site_b", "site_c")
DEFAULT_RUN = ROOT / "runs" / "adversarial_reference" / "three-phase_N100_raw_export"
CATEGORY_COLUMNS = ("precision", "recall", "f1", "f1_interval")


def unlabeled(documents):
    return [Document(d.id, d.text) for d in documents]


def of_category(documents, category: str) -> list[Document]:
    return [Document(d.id, d.text, tuple(s for s in d.spans if s.category == category)) for d in documents]


def pattern_scores(documents) -> list[dict]:
    """Each pattern on `documents` (gold-labeled): its spans; the share of them that overlap a gold
    PHI span of any type, and of their official tokens that are gold PHI tokens; the share of the
    gold spans of its category that it overlaps."""
    rows = []
    for pattern in PATTERNS:
        category = phi_type(pattern.label).category
        spans = hits = tokens = token_hits = gold = covered = 0
        for document in documents:
            found = list(pattern.spans(document.text))
            gold_marks, found_marks = _marks(document.text, document.spans), _marks(document.text, found)
            spans += len(found)
            hits += sum(any(gold_marks[s.start:s.end]) for s in found)
            predicted, true = phi_tokens(document.text, found), phi_tokens(document.text, document.spans)
            tokens += len(predicted)
            token_hits += len(predicted & true)
            of_its_type = [s for s in document.spans if s.type == pattern.label]
            gold += len(of_its_type)
            covered += sum(any(found_marks[s.start:s.end]) for s in of_its_type)
        rows.append({"pattern": pattern.name, "label": pattern.label, "category": category,
                     "default": pattern.default, "spans": spans, "precision": hits / spans if spans else None,
                     "token_precision": token_hits / tokens if tokens else None, "gold_spans": gold,
                     "recall": covered / gold if gold else None})
    return rows


def _marks(text: str, spans) -> bytearray:
    marks = bytearray(len(text))
    for span in spans:
        marks[span.start:span.end] = b"\x01" * (span.end - span.start)
    return marks


def scores(gold, predicted) -> dict:
    """Overall headline scores (score_row) and, per category with official HIPAA tokens on either
    side, the category-restricted official token HIPAA scores and the category's "found" recall."""
    overall = score_row(evaluate_corpus(gold, predicted))
    categories = sorted({s.category for d in [*gold, *predicted] for s in d.spans})
    per_category = {}
    for category in categories:
        labelled = evaluate_corpus(of_category(gold, category), of_category(predicted, category))
        measure = labelled["token_official_hipaa"]
        if not measure["tp"] + measure["fp"] + measure["fn"]:
            continue
        found = evaluate_corpus(of_category(gold, category), predicted)["token_official_hipaa"]
        per_category[category] = {**{key: measure[key] for key in (*CATEGORY_COLUMNS, "tp", "fp", "fn")},
                                  "found_recall": found["recall"]}
    return {"overall": overall, "per_category": per_category}


def hipaa_counts(gold, predicted) -> list[Counts]:
    """Per note (paired by id), the official token HIPAA counts of `predicted`."""
    by_id = {d.id: d for d in predicted}
    return [official_token_counts(d.text, filter(is_hipaa, d.spans), filter(is_hipaa, by_id[d.id].spans))
            for d in gold]


def f1_gain(base: list[Counts], other: list[Counts], resamples: int = RESAMPLES, seed: int = 0) -> dict:
    """Micro F1 of `other` minus that of `base` on the same notes, with its 95% paired percentile
    bootstrap interval (the notes resampled with replacement, both systems on the same draw)."""
    def f1(counts):
        tp, fp, fn = counts[..., 0], counts[..., 1], counts[..., 2]
        return np.divide(2 * tp, 2 * tp + fp + fn, out=np.zeros(tp.shape), where=2 * tp + fp + fn > 0)

    a, b = (np.array([(c.tp, c.fp, c.fn) for c in counts]) for counts in (base, other))
    draws = np.random.default_rng(seed).integers(len(a), size=(resamples, len(a)))
    gains = f1(b[draws].sum(axis=1)) - f1(a[draws].sum(axis=1))
    low, high = np.quantile(gains, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return {"gain": float(f1(b.sum(axis=0)) - f1(a.sum(axis=0))), "interval": [float(low), float(high)]}


def pipelines(run: Path, folder: Path):
    """(name, pipeline) for the run's representer with its retrained and its joint tagger, published
    under `folder` and signed with a throwaway key."""
    key = Ed25519PrivateKey.generate()
    publish_run(run / "training", key, folder / "joint")
    joint = open_bundle(folder / "joint", key.public_key())
    publish_pipeline(joint, run / "retrained" / "models" / "tagger.keras", key, folder / "retrained",
                     {"source": str(run / "retrained")})
    return [("tagger retrained on exports", open_bundle(folder / "retrained", key.public_key())),
            ("joint tagger", joint)]


def table(result: dict) -> str:
    lines = [f"# Pattern layer beside the tagger (PhysioNet `test`, {result['test_notes']} notes)", "",
             f"{result['date']}, commit {result['commit']}; taggers of `{result['run']}`; command "
             f"`{result['command']}`. Patterns: the default set of client/patterns.py "
             f"({', '.join(result['default_patterns'])}). Both = `client deidentify --patterns`: the union of the "
             "spans, overlapping spans joined over their extent, labelled like the longest (a pattern on ties).", "",
             "## Overall", "", f"| system | {score_header()} |", "|---|" + "---|" * len(SCORE_COLUMNS)]
    for name, row in result["systems"].items():
        lines.append(f"| {name} | " + " | ".join(format_score(row["overall"][key]) for key in SCORE_COLUMNS) + " |")
    lines += [""] + [f"Adding the patterns to the {name}: token HIPAA F1 (official) {gain['gain']:+.4f}, 95% paired "
                     f"bootstrap interval over notes {format_score(gain['interval'])}."
                     for name, gain in result["gains"].items()]
    lines += ["", "## Per category (official i2b2 2014 tokens, HIPAA types, spans of the category on both sides)", "",
              "| category | system | P | R | F1 | F1 95% bootstrap CI | tp | fp | fn | found (R, any label) |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    categories = sorted({c for row in result["systems"].values() for c in row["per_category"]})
    for category in categories:
        for name, row in result["systems"].items():
            cell = row["per_category"].get(category)
            if cell is None:
                lines.append(f"| {category} | {name} | - | - | - | - | 0 | 0 | 0 | - |")
                continue
            lines.append(f"| {category} | {name} | " + " | ".join(format_score(cell[key]) for key in CATEGORY_COLUMNS)
                         + f" | {cell['tp']} | {cell['fp']} | {cell['fn']} | {format_score(cell['found_recall'])} |")
    lines += ["", f"## Each pattern on the training splits ({', '.join(TRAIN_SPLITS)}; {result['train_notes']} notes)",
              "", "precision: share of its spans that overlap a gold PHI span (any type); token precision: the same "
              "over its official i2b2 tokens; recall: share of the gold spans of its i2b2 type (DATE: PhysioNet Date "
              "and DateYear) that it overlaps (n/a: no such gold span in PhysioNet). Not in the default set: "
              "marked (off).", "",
              "| pattern | label | spans | precision | token precision | gold spans of its type | recall |",
              "|---|---|---|---|---|---|---|"]

    def cell(value):
        return "n/a" if value is None else format_score(value)

    for row in result["patterns_on_training"]:
        name = row["pattern"] + ("" if row["default"] else " (off)")
        lines.append(f"| {name} | {row['label']} | {row['spans']} | {cell(row['precision'])} | "
                     f"{cell(row['token_precision'])} | {row['gold_spans']} | {cell(row['recall'])} |")
    train = result["patterns_alone_on_training"]["overall"]
    lines += ["", "The default set alone on the training splits: " + ", ".join(
        f"{COLUMN_TITLES[key]} {format_score(train[key])}" for key in SCORE_COLUMNS[:4]) + "."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, default=DEFAULT_RUN, help="a run folder with training/ and retrained/")
    parser.add_argument("--results-name", default="pattern_layer")
    args = parser.parse_args()
    warnings.simplefilter("ignore", CorpusWarning)
    train = [d for split in TRAIN_SPLITS for d in read_corpus(DATA, "physionet", split=split)]
    test = read_corpus(DATA, "physionet", split="test")
    started = time.perf_counter()
    patterns_alone = [with_patterns(d, DEFAULT_PATTERNS) for d in unlabeled(test)]
    systems = {"patterns alone": scores(test, patterns_alone)}
    gains = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, pipeline in pipelines(args.run, Path(folder)):
            embeddings = pipeline.load_embeddings()
            alone = list(find_phi(unlabeled(test), pipeline, embeddings))
            both = list(find_phi(unlabeled(test), pipeline, embeddings, patterns=DEFAULT_PATTERNS))
            systems[name] = scores(test, alone)
            systems[f"{name} + patterns"] = scores(test, both)
            gains[name] = f1_gain(hipaa_counts(test, alone), hipaa_counts(test, both))
    result = {"date": str(date.today()), "commit": git_commit(), "run": str(args.run.relative_to(ROOT))
              if args.run.is_relative_to(ROOT) else str(args.run),
              "command": "python experiments/pattern_layer.py", "test_notes": len(test), "train_notes": len(train),
              "default_patterns": [p.name for p in DEFAULT_PATTERNS], "systems": systems, "gains": gains,
              "patterns_on_training": pattern_scores(train),
              "patterns_alone_on_training": scores(train, [with_patterns(d, DEFAULT_PATTERNS)
                                                           for d in unlabeled(train)]),
              "seconds": round(time.perf_counter() - started, 1)}
    write_results(args.results_name, table(result), result)


if __name__ == "__main__":
    main()
