"""Presidio's predefined recognizers beside the deidpool recognizer (issue #21): on PhysioNet
`test`, Presidio's `AnalyzerEngine` with (1) its default predefined recognizers, (2) only the
deidpool recognizer (client/integrations/presidio_recognizer.py, pattern layer on, as `client
deidentify`) and (3) both registered together; the official i2b2 2014 token HIPAA P/R/F1 with
its bootstrap interval over notes, and notes/s of `analyze` one note at a time.

Every engine runs on `BlankSpacyNlpEngine` (no spaCy model can be downloaded here): Presidio's
spaCy NER recognizer is registered in (1) and (3) but finds nothing on a blank pipeline, so
Presidio's side is its pattern recognizers only. The deidpool recognizer is the reference run's
(default: runs/adversarial_reference/three-phase_N100_raw_export) representer with the tagger
retrained on its exports, published as a signed pipeline with a throwaway key
(`pattern_layer.pipelines`), as `pattern_layer`'s primary row.

    python experiments/presidio_comparison.py [--run RUN_DIR] [--results-name presidio_comparison]

Scoring: each Presidio result becomes a span; the deidpool recognizer's keep the pipeline's own
label (its `deidpool_label` metadata), the others get the i2b2 2014 type of their Presidio entity
(`I2B2_TYPE_OF_ENTITY`). The type matters: the official HIPAA measure keeps only the spans of its
HIPAA types (corpus.i2b2_official) on both sides, then compares tokens whatever their type.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
import warnings
from collections import Counter
from datetime import date
from importlib.metadata import version
from pathlib import Path

from deidpool.representer.threads import configure_threads

configure_threads()

from deidpool.client.patterns import DEFAULT_PATTERNS  # noqa: E402
from deidpool.corpus.document import Document, Span  # noqa: E402
from deidpool.corpus.errors import CorpusWarning  # noqa: E402
from deidpool.corpus.formats import read_corpus  # noqa: E402
from deidpool.corpus.i2b2_official import HIPAA_TYPES, phi_tokens  # noqa: E402
from deidpool.corpus.metrics import COLUMN_TITLES, evaluate_corpus, format_score, score_row  # noqa: E402
from pattern_layer import DATA, DEFAULT_RUN, ROOT, pipelines  # noqa: E402
from results_files import git_commit, score_header, write_results  # noqa: E402

try:
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry, RecognizerResult

    from deidpool.client.deidentify import PhiFinder
    from deidpool.client.integrations.presidio_recognizer import BlankSpacyNlpEngine, DeidpoolRecognizer
except ImportError as error:  # pragma: no cover - depends on the environment
    raise SystemExit(f"this experiment needs {error.name}: pip install 'deidpool[presidio]'") from error

LANGUAGE = "en"
DEFAULT, DEIDPOOL, BOTH = ("Presidio default recognizers", "Presidio + deidpool recognizer only",
                           "Presidio default recognizers + deidpool recognizer")
SCORED_MEASURES = ("token_official_hipaa", "token_hipaa", "token_official_all")
COLUMNS = ("token_official_hipaa_precision", "token_official_hipaa_recall", "token_official_hipaa_f1",
           "token_official_hipaa_f1_interval", "token_hipaa_f1", "token_official_all_f1")

# Presidio entity -> the i2b2 2014 type its spans are scored as. Within the official HIPAA types
# the choice does not change the (binary) token scores; whether the type is one of them does.
I2B2_TYPE_OF_ENTITY: dict[str, tuple[str, str]] = {
    # entity: (i2b2 2014 type, why)
    "PERSON": ("PATIENT", "Presidio does not tell patients from clinicians; as DOCTOR no name would be scored"),
    "LOCATION": ("LOCATION-OTHER", "PhysioNet's lumped Location is LOCATION-OTHER (not an official HIPAA type); "
                                   "as CITY every location found would be a false positive"),
    "ORGANIZATION": ("ORGANIZATION", ""),
    "NRP": ("OTHER", "nationality, religious or political group: no i2b2 or HIPAA counterpart"),
    "AGE": ("AGE", ""),
    "DATE_TIME": ("DATE", "times of day too, which i2b2 does not annotate"),
    "PHONE_NUMBER": ("PHONE", "fax numbers too"),
    "EMAIL_ADDRESS": ("EMAIL", ""),
    "EMAIL": ("EMAIL", "the spaCy NER recognizer's name"),
    "URL": ("URL", "not an official HIPAA type"),
    "IP_ADDRESS": ("IPADDR", "not an official HIPAA type"),
    "MAC_ADDRESS": ("DEVICE", "a device identifier"),
    "US_SSN": ("SSN", ""),
    "MEDICAL_LICENSE": ("LICENSE", ""),
    "US_DRIVER_LICENSE": ("LICENSE", ""),
    "UK_NHS": ("MEDICALRECORD", "the NHS patient number"),
    "CREDIT_CARD": ("ACCOUNT", ""),
    "US_BANK_NUMBER": ("ACCOUNT", ""),
    "IBAN_CODE": ("ACCOUNT", ""),
    "CRYPTO": ("ACCOUNT", "a wallet address: no i2b2 counterpart, closest to an account number"),
    "US_ITIN": ("IDNUM", "IDNUM is not an official HIPAA type (the scorer's IDNUM pattern never matches)"),
    "US_PASSPORT": ("IDNUM", "as US_ITIN"),
    "UUID": ("IDNUM", "as US_ITIN"),
    "ID": ("IDNUM", "the spaCy NER recognizer's and the deidpool recognizer's name for other identifiers"),
    "PROFESSION": ("PROFESSION", "the deidpool recognizer's name; not an official HIPAA type"),
    "OTHER": ("OTHER", "the deidpool recognizer's name; not an official HIPAA type"),
}


def as_document(note: Document, results: list[RecognizerResult], *, entity_only: bool = False) -> Document:
    """`note` with one span per Presidio result: labelled by the deidpool pipeline's own label where
    the result carries it (unless `entity_only`), else by the i2b2 2014 type of its entity."""
    spans = []
    for result in results:
        label = None if entity_only else (result.recognition_metadata or {}).get("deidpool_label")
        if label is None:
            if result.entity_type not in I2B2_TYPE_OF_ENTITY:
                raise KeyError(f"no i2b2 2014 type for the Presidio entity {result.entity_type!r}")
            label = I2B2_TYPE_OF_ENTITY[result.entity_type][0]
        spans.append(Span(result.start, result.end, label, note.text[result.start:result.end]))
    return Document(note.id, note.text, tuple(spans))


def analyzers(recognizer: DeidpoolRecognizer) -> dict[str, AnalyzerEngine]:
    """The three engines on one blank spaCy NLP engine, registries built as docs/integrations.md says."""
    nlp_engine = BlankSpacyNlpEngine([LANGUAGE])
    nlp_engine.load()
    default = RecognizerRegistry(supported_languages=[LANGUAGE])
    default.load_predefined_recognizers(languages=[LANGUAGE], nlp_engine=nlp_engine)
    both = RecognizerRegistry(supported_languages=[LANGUAGE])
    both.load_predefined_recognizers(languages=[LANGUAGE], nlp_engine=nlp_engine)
    both.add_recognizer(recognizer)
    only = RecognizerRegistry(recognizers=[recognizer], supported_languages=[LANGUAGE])
    return {name: AnalyzerEngine(registry=registry, nlp_engine=nlp_engine, supported_languages=[LANGUAGE])
            for name, registry in ((DEFAULT, default), (DEIDPOOL, only), (BOTH, both))}


def timed_analysis(analyzer: AnalyzerEngine, notes: list[Document]) -> tuple[list[list[RecognizerResult]], dict]:
    """`analyze` on each note, one at a time, after one warm-up call on the first note (the
    deidpool recognizer's first call compiles its tagger); the results and the timings."""
    started = time.perf_counter()
    analyzer.analyze(text=notes[0].text, language=LANGUAGE)
    warm_up = time.perf_counter() - started
    started = time.perf_counter()
    results = [analyzer.analyze(text=note.text, language=LANGUAGE) for note in notes]
    seconds = time.perf_counter() - started
    return results, {"warm_up_seconds": round(warm_up, 3), "seconds": round(seconds, 2),
                     "notes_per_second": len(notes) / seconds}


def entity_precision(test: list[Document], results: list[list[RecognizerResult]], examples: int = 8) -> dict:
    """Per Presidio entity: its results, the share of their official i2b2 tokens that are gold PHI
    tokens of any type, and the most frequent texts of its false positives (results with no gold
    PHI token; never a text that is PHI)."""
    results_of, tokens, hits, false_positives = Counter(), Counter(), Counter(), {}
    for note, found in zip(test, results):
        gold = phi_tokens(note.text, note.spans)
        for result in found:
            text = note.text[result.start:result.end]
            predicted = phi_tokens(note.text, [Span(result.start, result.end, "OTHER", text)])
            results_of[result.entity_type] += 1
            tokens[result.entity_type] += len(predicted)
            hits[result.entity_type] += len(predicted & gold)
            if not predicted & gold:
                false_positives.setdefault(result.entity_type, Counter())[" ".join(text.split())] += 1
    frequent = {entity: [text for text, _ in texts.most_common(examples)] for entity, texts in false_positives.items()}
    return {entity: {"results": results_of[entity], "token_precision": hits[entity] / tokens[entity],
                     "false_positives": frequent.get(entity, [])} for entity in sorted(results_of)}


def system_row(analyzer: AnalyzerEngine, test: list[Document]) -> dict:
    results, timing = timed_analysis(analyzer, test)
    predicted = [as_document(note, found) for note, found in zip(test, results)]
    by_entity = [as_document(note, found, entity_only=True) for note, found in zip(test, results)]
    return {"recognizers": sorted(r.name for r in analyzer.registry.recognizers), **timing,
            "scores": score_row(evaluate_corpus(test, predicted), SCORED_MEASURES),
            "scores_by_entity_name": score_row(evaluate_corpus(test, by_entity), SCORED_MEASURES),
            "results_by_entity": dict(sorted(Counter(r.entity_type for found in results for r in found).items())),
            "entities": entity_precision(test, results)}


def batched_rate(finder: PhiFinder, test: list[Document]) -> float:
    """Notes/s of the same pipeline without Presidio, all notes in one `PhiFinder.find` call (as
    `client deidentify`), after a call on the first note."""
    list(finder.spans([test[0].text]))
    started = time.perf_counter()
    list(finder.find(Document(note.id, note.text) for note in test))
    return len(test) / (time.perf_counter() - started)


def table(result: dict) -> str:
    systems = result["systems"]
    lines = [f"# Presidio's default recognizers vs the deidpool recognizer (PhysioNet `test`, "
             f"{result['test_notes']} notes)", "",
             f"{result['date']}, commit {result['commit']}; command `{result['command']}`; presidio-analyzer "
             f"{result['presidio_analyzer']}, NLP engine `BlankSpacyNlpEngine` (`spacy.blank(\"en\")`, spaCy "
             f"{result['spacy']}). deidpool recognizer: `{result['run']}`'s representer with the tagger retrained "
             "on its exports, a signed pipeline (throwaway key) read by `DeidpoolRecognizer`, pattern layer on "
             "(the default of `client deidentify`).", "",
             f"| system | {score_header(COLUMNS)} | notes/s |", "|---|" + "---|" * (len(COLUMNS) + 1)]
    for name, row in systems.items():
        lines.append(f"| {name} | " + " | ".join(format_score(row["scores"][key]) for key in COLUMNS)
                     + f" | {row['notes_per_second']:.1f} |")
    deidpool = systems[DEIDPOOL]
    lines += ["", "- **Presidio's default recognizers here are its pattern recognizers only.** "
              "`load_predefined_recognizers()` registers Presidio's spaCy NER recognizer (PERSON, LOCATION, "
              "ORGANIZATION, NRP, ...), but on a blank spaCy pipeline it finds nothing: with no downloadable NER "
              "model there is no PERSON or LOCATION in the first row. presidio-analyzer ships no model-free NER "
              "alternative: its other NER recognizers (Stanza, transformers, GLiNER, Hugging Face and medical NER) "
              "load a model, and the Azure AI Language, AHDS and LangExtract ones call a service or an LLM. "
              f"Recognizers of the first row: {', '.join(systems[DEFAULT]['recognizers'])}.",
              f"- notes/s: wall time of `AnalyzerEngine.analyze` over all {result['test_notes']} notes, one note per "
              "call (Presidio's interface), after one warm-up call on the first note, on 2 CPU cores shared with "
              f"other jobs (load average {result['load_average'][0]:.1f} before, {result['load_average'][1]:.1f} "
              "after). The warm-up excludes the deidpool recognizer's loading: its first call compiles the tagger "
              f"({deidpool['warm_up_seconds']:.1f} s); loading the pipeline's embeddings took "
              f"{result['embeddings_seconds']:.1f} s before that. The first row's warm-up "
              f"took {systems[DEFAULT]['warm_up_seconds']:.2f} s. At the first URL or e-mail candidate, in the "
              "warm-up or the timed pass, `tldextract` tries to fetch the public suffix list; offline, name "
              "resolution fails at once and it falls back to its bundled copy (its logged traceback is silenced). "
              "The same pipeline without Presidio, all notes in one `PhiFinder.find` call (as `client "
              f"deidentify`): {result['deidpool_batched_notes_per_second']:.1f} notes/s; one note per call pays "
              "for a tf.data pipeline built, and its map function traced, on every call (client/inference.py).",
              "- Scoring: the deidpool recognizer's results keep the pipeline's own label "
              "(`recognition_metadata[\"deidpool_label\"]`: PhysioNet's labels and the patterns' i2b2 types); "
              "every other result is scored as the i2b2 2014 type of its Presidio entity (table below). The "
              "official HIPAA measure keeps only spans of its HIPAA types on both sides (on PhysioNet: patient "
              "names, dates, ages, phone numbers; clinician names, locations and Other are not), then compares "
              "tokens whatever their type; \"token all-PHI\" keeps every span of both sides, so it does not "
              "depend on the types at all.", "",
              "If the deidpool results were typed by their Presidio entity name alone (as a Presidio user who "
              "reads only `entity_type` would; PERSON scored as PATIENT, so clinician names become false "
              "positives):", "", f"| system | {score_header(COLUMNS[:4])} |", "|---|" + "---|" * 4]
    for name in (DEIDPOOL, BOTH):
        lines.append(f"| {name} | " + " | ".join(format_score(systems[name]["scores_by_entity_name"][key])
                                                for key in COLUMNS[:4]) + " |")
    lines += ["", "## Presidio entities as i2b2 2014 types", "",
              "| Presidio entity | scored as | official HIPAA type | "
              + " | ".join(f"results: {name}" for name in systems) + " | note |",
              "|---|---|---|" + "---|" * len(systems) + "---|"]
    for entity, (type_, note) in I2B2_TYPE_OF_ENTITY.items():
        counts = " | ".join(str(row["results_by_entity"].get(entity, 0)) for row in systems.values())
        lines.append(f"| {entity} | {type_} | {'yes' if type_ in HIPAA_TYPES else 'no'} | {counts} | {note} |")
    lines += ["", "## Where the default recognizers' results fall", "",
              "token precision: the share of a result's official i2b2 tokens that are gold PHI tokens of any type "
              "(so a URL or a driver's licence that hits a gold Location counts as a hit); false positives: "
              "results with no gold PHI token, most frequent first.", "",
              "| Presidio entity | results | token precision | most frequent false positives |", "|---|---|---|---|"]
    for entity, row in systems[DEFAULT]["entities"].items():
        texts = ", ".join(f"`{text}`" for text in row["false_positives"]).replace("|", "\\|")
        lines.append(f"| {entity} | {row['results']} | {format_score(row['token_precision'])} | {texts} |")
    lines += ["", "The deidpool recognizer's results are counted under their Presidio entity "
              "(docs/integrations.md) but scored by their own label. Column titles: "
              + "; ".join(f"{COLUMN_TITLES[key]}" for key in ("token_hipaa_f1", "token_official_all_f1")) + "."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, default=DEFAULT_RUN, help="a run folder with training/ and retrained/")
    parser.add_argument("--results-name", default="presidio_comparison")
    args = parser.parse_args()
    if not (DATA / "splits.json").is_file():
        print(f"skipped: PhysioNet is not at {DATA} (it needs {DATA / 'id.text'}, id-phi.phrase and splits.json)")
        return
    warnings.simplefilter("ignore", CorpusWarning)
    logging.getLogger("tldextract").setLevel(logging.CRITICAL)  # offline: it falls back to its bundled list
    test = read_corpus(DATA, "physionet", split="test")
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        [(_, pipeline), _] = pipelines(args.run, Path(folder))  # the tagger retrained on exports first
        loading = time.perf_counter()
        finder = PhiFinder(pipeline, pipeline.load_embeddings(), DEFAULT_PATTERNS)
        embeddings_seconds = time.perf_counter() - loading
        systems = {name: system_row(analyzer, test)
                   for name, analyzer in analyzers(DeidpoolRecognizer(finder)).items()}
        batched = batched_rate(finder, test)
    result = {"date": str(date.today()), "commit": git_commit(),
              "run": str(args.run.relative_to(ROOT)) if args.run.is_relative_to(ROOT) else str(args.run),
              "command": "python experiments/presidio_comparison.py", "test_notes": len(test),
              "presidio_analyzer": version("presidio-analyzer"), "spacy": version("spacy"),
              "embeddings_seconds": round(embeddings_seconds, 2),
              "load_average": [load_before, os.getloadavg()[0]], "systems": systems,
              "deidpool_batched_notes_per_second": batched,
              "i2b2_type_of_entity": {entity: type_ for entity, (type_, _) in I2B2_TYPE_OF_ENTITY.items()},
              "seconds": round(time.perf_counter() - started, 1)}
    write_results(args.results_name, table(result), result)


if __name__ == "__main__":
    main()
