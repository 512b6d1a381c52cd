"""Tagger speed on this machine: one training epoch over the PhysioNet training notes
(provider + site_a + site_b + site_c) and Viterbi inference throughput on `test`, both with the
full-size tagger (2 x BiLSTM 128, GloVe + casing). Writes experiments/results/tagger_speed.{md,json}.

    python experiments/bench_tagger_speed.py [--epochs 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import keras
import numpy as np

from corpus.formats import read_corpus
from corpus.prepare import prepare_document
from corpus.tagging import tag_vocabulary
from representer.dataset import SentenceData
from representer.embeddings import load_embeddings
from representer.tagger import build_tagger, compute_class_weights, tag_sentences
from representer.training import TaggerTraining

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "physionet-deid"
RESULTS = ROOT / "experiments" / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=2, help="training epochs to time (the first includes tracing)")
    parser.add_argument("--repeats", type=int, default=3, help="timed inference passes over the test split")
    args = parser.parse_args()
    if not DATA.exists():
        sys.exit(f"PhysioNet deid not found at {DATA} (it lives in ../shared/data beside the repository)")
    glove = load_embeddings("glove")
    train_docs = [d for s in ("provider", "site_a", "site_b", "site_c") for d in read_corpus(DATA, "physionet", split=s)]
    test_docs = read_corpus(DATA, "physionet", split="test")
    train_sentences = [s for d in train_docs for s in prepare_document(d)]
    test_sentences = [s for d in test_docs for s in prepare_document(d)]
    vocabulary = tag_vocabulary({span.source_type for d in train_docs + test_docs for span in d.spans})
    train = SentenceData.from_sentences(train_sentences, glove, vocabulary)
    test = SentenceData.from_sentences(test_sentences, glove, vocabulary)
    keras.utils.set_random_seed(0)
    tagger = build_tagger(glove.dim, len(vocabulary))
    procedure = TaggerTraining(tagger, compute_class_weights(train.tag_counts(len(vocabulary))))
    epoch_seconds = []
    for epoch in range(1, args.epochs + 1):
        started = time.perf_counter()
        procedure.train_epoch(train, epoch, np.random.default_rng(epoch))
        epoch_seconds.append(time.perf_counter() - started)
    tag_sentences(tagger, test)  # trace once
    inference_seconds = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        tag_sentences(tagger, test)
        inference_seconds.append(time.perf_counter() - started)
    result = {"cpus": os.cpu_count(), "train_sentences": len(train), "train_tokens": int(train.lengths.sum()),
              "epoch_seconds": [round(s, 1) for s in epoch_seconds],
              "test_sentences": len(test), "inference_seconds": [round(s, 2) for s in inference_seconds],
              "inference_sentences_per_second": round(len(test) / min(inference_seconds))}
    table = "\n".join([
        "| measure | value |", "|---|---:|",
        f"| CPUs | {result['cpus']} |",
        f"| training sentences / tokens | {len(train):,} / {result['train_tokens']:,} |",
        f"| training epoch s (epoch 1 includes tracing) | {', '.join(map(str, result['epoch_seconds']))} |",
        f"| test sentences | {len(test):,} |",
        f"| inference s per pass (traced) | {', '.join(map(str, result['inference_seconds']))} |",
        f"| inference sentences/s (best pass) | {result['inference_sentences_per_second']:,} |"])
    print(table)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "tagger_speed.md").write_text(table + "\n")
    (RESULTS / "tagger_speed.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
