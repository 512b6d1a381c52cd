"""Speed of the input side: GloVe loading in a fresh process and reading, tokenizing and
sentence-splitting the reference corpora; writes results/speed/corpus_speed.md and .json."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from itertools import islice
from pathlib import Path

from deidpool.corpus.formats import read_corpus
from deidpool.corpus.sentences import split_sentences
from deidpool.corpus.tokenize import tokenize
from results_files import results_file

RUNS = 5
LOOKUP_TOKENS = 1000
REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
CORPORA = {  # name -> [(folder, format)]
    "PhysioNet deid": [(DATA / "physionet-deid", "physionet")],
    "MEDDOCAN train+dev": [(DATA / "meddocan" / split / "brat", "brat") for split in ("train", "dev")],
}
# Run in a fresh interpreter: reads the tokens to look up from stdin, prints its timings.
GLOVE_CHILD = """
import json, sys, time
start = time.perf_counter()
from deidpool.representer.embeddings import load_glove_default
imported = time.perf_counter()
load_glove_default().sentence_matrix(json.load(sys.stdin))
print(json.dumps({"imports": imported - start, "load": time.perf_counter() - imported}))
"""


def time_corpus(sources: list[tuple[Path, str]]) -> dict:
    """One pass: read the documents, then tokenize and sentence-split each of them."""
    start = time.perf_counter()
    documents = [document for path, fmt in sources for document in read_corpus(path, fmt)]
    read = time.perf_counter()
    tokens = sentences = 0
    for document in documents:
        document_tokens = tokenize(document.text)
        tokens += len(document_tokens)
        sentences += len(split_sentences(document.text, document_tokens))
    done = time.perf_counter()
    return {"documents": len(documents), "tokens": tokens, "sentences": sentences,
            "read": read - start, "tokenize + split sentences": done - read, "total": done - start}


def time_glove(words: list[str]) -> dict:
    """One fresh process that imports, loads GloVe and looks up `words`."""
    start = time.perf_counter()
    child = subprocess.run([sys.executable, "-c", GLOVE_CHILD], input=json.dumps(words), capture_output=True,
                           text=True, check=True, cwd=REPO)
    return {**json.loads(child.stdout), "process": time.perf_counter() - start}


def main() -> None:
    if not DATA.is_dir():
        sys.exit(f"reference corpora not found at {DATA} (expected ../shared/data beside the repository)")
    rows = []
    for name, sources in CORPORA.items():
        runs = [time_corpus(sources) for _ in range(RUNS)]
        for part in ["read", "tokenize + split sentences", "total"]:
            rows.append({"step": f"{name}: {part}", "documents": runs[0]["documents"], "tokens": runs[0]["tokens"],
                         "sentences": runs[0]["sentences"], "runs_s": [run[part] for run in runs]})
    notes = read_corpus(*CORPORA["PhysioNet deid"][0])
    words = list(islice((token.text for note in notes for token in tokenize(note.text)), LOOKUP_TOKENS))
    runs = [time_glove(words) for _ in range(RUNS)]
    for part, label, tokens in [("load", "GloVe: load + first lookup, after imports", len(words)),
                                ("imports", "GloVe: imports (numpy, pyarrow, gensim)", None),
                                ("process", "GloVe: whole fresh process (start, imports, load, lookup)", len(words))]:
        rows.append({"step": label, "documents": None, "tokens": tokens, "sentences": None,
                     "runs_s": [run[part] for run in runs]})
    for row in rows:
        row["wall_s"] = statistics.median(row["runs_s"])

    def cell(value):
        return "" if value is None else f"{value:,}"

    table = [f"| step | documents | tokens | sentences | wall s (median of {RUNS}) |", "|---|---:|---:|---:|---:|"]
    table += [f"| {row['step']} | {cell(row['documents'])} | {cell(row['tokens'])} | {cell(row['sentences'])} "
              f"| {row['wall_s']:.3f} |" for row in rows]
    machine = f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}"
    intro = f"# Corpus and embedding speed\n\n{machine}; {RUNS} runs each; GloVe in a fresh process per run.\n"
    markdown = "\n".join([intro, *table]) + "\n"
    print(markdown)
    results_file("corpus_speed", ".md").parent.mkdir(parents=True, exist_ok=True)
    results_file("corpus_speed", ".md").write_text(markdown, encoding="utf-8")
    summary = {"machine": machine, "runs": RUNS, "rows": rows}
    results_file("corpus_speed", ".json").write_text(json.dumps(summary, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
