"""Speed of every compute path on this machine, side by side, each as a rate and as a fraction of
its FLOP ceiling (issue: speed). Writes experiments/results/speed/speed.{md,json} (or --results-name).

    python experiments/bench_speed.py [--tasks export deidentify ...] [--runtimes onnxruntime tensorflow]
                                      [--tagger-units 128 256] [--sentences N] [--repeats 3]

Tasks, on PhysioNet with production-size models (GloVe 50d; representer BiLSTM 128 -> d = 50;
tagger 2 x BiLSTM 128, or each of --tagger-units, + CRF; adversaries 2 x BiLSTM 64), untrained,
since speed does not depend on the weights:
- export: `client export` of `site_a` (prepare, pseudonymize at N = 100, embed, represent,
  shuffle, seal, the re-identification bound), sentences/s;
- de-identification: `test` end to end from the note files (read, tokenize, tag, write redacted
  text), notes/s;
- tagger inference: Viterbi tags of `test` on GloVe features, sentences/s;
- a tagger training epoch, a P1 epoch and a P3 epoch (parts a and b) over the training splits
  (provider + site_a + site_b + site_c, or a random --sentences of them), seconds.
Export and de-identification run once under each of --runtimes (`deidpool.client.inference`: ONNX
Runtime or a compiled TensorFlow function); the others are TensorFlow's.

Every task runs once untimed (tracing, caches) and then --repeats times; the table gives the
median. FLOPs are counted from the built models' shapes: a token costs 2 x rows x columns for
every matrix it is multiplied by (LSTM kernels and recurrent kernels, dense kernels, the CRF's
transitions), a training step 3 x its forward FLOPs. The ceiling of a task is the machine's
float32 GFLOP/s, measured here with 4096 x 4096 matrix products (two at once), over the task's FLOPs per unit.
A BiLSTM at batch 32 multiplies 32-row matrices, which no CPU runs at its large-product rate:
the table also gives that rate (a 32 x 256 by 256 x 512 product, the tagger's second layer).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deidpool.representer.threads import configure_threads

configure_threads()

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from adversarial import DATA, TRAIN_SPLITS, sentences  # noqa: E402
from bench_client import prepare  # noqa: E402
from deidpool.adversary.procedures import AdversarialData, AlternatingTraining, DeidTraining, build_models  # noqa: E402
from deidpool.client.inference import RUNTIMES  # noqa: E402
from deidpool.corpus.formats import read_corpus  # noqa: E402
from deidpool.corpus.tagging import tag_vocabulary  # noqa: E402
from deidpool.representer.dataset import BATCH_SIZE, SentenceData  # noqa: E402
from deidpool.representer.tagger import build_tagger, compute_class_weights, tag_sentences  # noqa: E402
from deidpool.representer.training import TaggerTraining  # noqa: E402
from results_files import write_results  # noqa: E402

TASKS = ("export", "deidentify", "tagger-inference", "tagger-epoch", "p1-epoch", "p3-epoch")
RUNTIME_TASKS = ("export", "deidentify")  # the tasks client.inference serves
TAGGER_TASKS = ("tagger-inference", "tagger-epoch")  # the tasks timed at every --tagger-units
NEIGHBOURS = 100
TRAINING_FACTOR = 3  # a training step: forward, and about twice that backward


def forward_flops_per_token(model) -> int:
    """2 x rows x columns summed over the model's matrices (each multiplies every token once)."""
    return sum(2 * int(np.prod(w.shape)) for w in model.weights if len(w.shape) == 2)


def matmul_gflops(rows: int, inner: int, columns: int, seconds: float = 2.0) -> float:
    """Best float32 GFLOP/s of rows x inner by inner x columns products over about `seconds`,
    as many at once as TensorFlow runs operations at once (so every core works), timed in
    groups worth about 2 GFLOP."""
    copies = max(1, tf.config.threading.get_inter_op_parallelism_threads())
    pairs = [(tf.random.normal((rows, inner)), tf.random.normal((inner, columns))) for _ in range(copies)]
    products = tf.function(lambda: [tf.matmul(a, b) for a, b in pairs], autograph=False)
    products()[0].numpy()
    flops = 2 * rows * inner * columns * copies
    group = max(1, int(2e9 // flops))
    best, deadline = float("inf"), time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        started = time.perf_counter()
        for _ in range(group):
            results = products()
        [result.numpy() for result in results]
        best = min(best, (time.perf_counter() - started) / group)
    return flops / best / 1e9


def timed(run, repeats: int) -> list[float]:
    """Seconds of `repeats` calls of `run` after one untimed call."""
    run()
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - started)
    return seconds


class Bench:
    """The data and models the tasks share, built once."""

    def __init__(self, folder: Path, sentences_limit: int | None, seed: int):
        from deidpool.representer import keys
        from deidpool.representer.bundle import open_bundle

        prepare(folder)
        self.folder = folder
        self.pipeline = open_bundle(folder / "pipeline", keys.load_public_key(folder / "keys" / "provider.pub",
                                                                              keys.SIGNING))
        self.embeddings = self.pipeline.load_embeddings()
        self.representer_flops = forward_flops_per_token(self.pipeline.load_representer())
        self.tagger_flops = forward_flops_per_token(self.pipeline.load_tagger())
        train_docs = [d for split in TRAIN_SPLITS for d in read_corpus(DATA, "physionet", split=split)]
        self.test_docs = read_corpus(DATA, "physionet", split="test")
        self.tags = tag_vocabulary({s.source_type for d in train_docs + self.test_docs for s in d.spans})
        pool = sentences(train_docs)
        if sentences_limit:
            chosen = np.random.default_rng(seed).choice(len(pool), min(sentences_limit, len(pool)), replace=False)
            pool = [pool[i] for i in chosen]
        self.train_sentences = pool
        self.test = SentenceData.from_sentences(sentences(self.test_docs), self.embeddings, self.tags)
        self.seed = seed

    def tokens(self, data: SentenceData) -> int:
        return int(np.sum(data.lengths))


def export_task(bench: Bench, repeats: int) -> dict:
    from deidpool.client.export import ExportSettings, export_contribution
    from deidpool.representer import keys

    documents = read_corpus(DATA, "physionet", split="site_a")
    folder, header = bench.folder, {}

    def run():
        out = folder / "export.contribution"
        header["value"] = export_contribution(
            documents, bench.pipeline, bench.embeddings, out, ExportSettings(neighbours=NEIGHBOURS),
            institution="site-a",
            signing_key=keys.load_private_key(folder / "keys" / "institution.key", keys.SIGNING),
            server_key=keys.load_public_key(folder / "keys" / "server-encryption.pub", keys.ENCRYPTION),
            progress=False).header
        out.unlink()

    seconds = timed(run, repeats)
    units = header["value"].sentences
    tokens = sum(len(s.tokens) for s in sentences(documents))
    return {"split": "site_a", "units": units, "unit": "sentences", "seconds": seconds,
            "flops_per_unit": bench.representer_flops * tokens / units}


def deidentify_task(bench: Bench, repeats: int) -> dict:
    from deidpool.client.deidentify import find_phi, write_deidentified

    out = bench.folder / "deidentified"

    def run():
        documents = read_corpus(DATA, "physionet", split="test")
        write_deidentified(find_phi(documents, bench.pipeline, bench.embeddings), out, "text", rng=random.Random(0))

    seconds = timed(run, repeats)
    per_note = bench.tokens(bench.test) / len(bench.test_docs)
    return {"split": "test", "units": len(bench.test_docs), "unit": "notes", "seconds": seconds,
            "flops_per_unit": (bench.representer_flops + bench.tagger_flops) * per_note}


def tagger_inference_task(bench: Bench, repeats: int, units: int = 128) -> dict:
    keras.utils.set_random_seed(bench.seed)
    tagger = build_tagger(bench.embeddings.dim, len(bench.tags), lstm_units=units)
    seconds = timed(lambda: tag_sentences(tagger, bench.test), repeats)
    return {"split": "test", "units": len(bench.test), "unit": "sentences", "seconds": seconds,
            "flops_per_unit": forward_flops_per_token(tagger) * bench.tokens(bench.test) / len(bench.test)}


def tagger_epoch_task(bench: Bench, repeats: int, units: int = 128) -> dict:
    train = SentenceData.from_sentences(bench.train_sentences, bench.embeddings, bench.tags)
    keras.utils.set_random_seed(bench.seed)
    tagger = build_tagger(bench.embeddings.dim, len(bench.tags), lstm_units=units)
    procedure = TaggerTraining(tagger, compute_class_weights(train.tag_counts(len(bench.tags))))
    epochs = iter(range(1, repeats + 2))
    seconds = timed(lambda: procedure.train_epoch(train, next(epochs), np.random.default_rng(bench.seed)), repeats)
    return {"split": "training", "units": len(train), "unit": "sentences", "seconds": seconds, "per_epoch": True,
            "flops_per_unit": TRAINING_FACTOR * forward_flops_per_token(tagger) * bench.tokens(train) / len(train)}


def _adversarial(bench: Bench):
    data = AdversarialData.from_sentences(bench.train_sentences, bench.embeddings, bench.tags, NEIGHBOURS)
    keras.utils.set_random_seed(bench.seed)
    return data, build_models(bench.embeddings.dim, len(bench.tags))


def p1_epoch_task(bench: Bench, repeats: int) -> dict:
    data, (representer, tagger, _) = _adversarial(bench)
    procedure = DeidTraining(representer, tagger)
    seconds = timed(lambda: procedure.train_epoch(data, 1, np.random.default_rng(bench.seed)), repeats)
    per_token = TRAINING_FACTOR * (forward_flops_per_token(representer) + forward_flops_per_token(tagger))
    return {"split": "training", "units": len(data.sentences), "unit": "sentences", "seconds": seconds,
            "per_epoch": True, "flops_per_unit": per_token * bench.tokens(data.sentences) / len(data.sentences)}


def p3_epoch_task(bench: Bench, repeats: int) -> dict:
    """A P3 epoch pairs every tagger batch with a batch of pairs (two sentences each). Part a:
    representer forward and tagger step on the sentences, representer forward on both sentences
    of each pair and an adversary step; part b: a representer step through tagger and
    adversaries (whose backward pass is taken, though their weights stay)."""
    data, (representer, tagger, adversary) = _adversarial(bench)
    procedure = AlternatingTraining(representer, tagger, adversary)
    parts = {"a": [], "b": []}

    def run():
        for part in parts:
            started = time.perf_counter()
            procedure.train_part(part, data, np.random.default_rng(bench.seed))
            parts[part].append(time.perf_counter() - started)

    seconds = timed(run, repeats)
    r, t, a = (forward_flops_per_token(m) for m in (representer, tagger, adversary))
    sentence_tokens = bench.tokens(data.sentences)
    batches = -(-len(data.sentences) // BATCH_SIZE)
    pair_tokens = batches * BATCH_SIZE * float(np.mean([len(s.tokens) for s in data.pairs.sentences]))
    part_a = sentence_tokens * (r + TRAINING_FACTOR * t) + pair_tokens * (2 * r + TRAINING_FACTOR * a)
    part_b = TRAINING_FACTOR * (sentence_tokens * (r + t) + pair_tokens * (2 * r + a))
    return {"split": "training", "units": len(data.sentences), "unit": "sentences", "seconds": seconds,
            "per_epoch": True, "parts_s": {part: s[1:] for part, s in parts.items()},
            "flops_per_unit": (part_a + part_b) / len(data.sentences)}


RUNNERS = {"export": export_task, "deidentify": deidentify_task, "tagger-inference": tagger_inference_task,
           "tagger-epoch": tagger_epoch_task, "p1-epoch": p1_epoch_task, "p3-epoch": p3_epoch_task}


def _row(task: str, result: dict, peak: float) -> str:
    median = statistics.median(result["seconds"])
    rate = result["units"] / median
    achieved = rate * result["flops_per_unit"] / 1e9
    ceiling = peak * 1e9 / result["flops_per_unit"]
    what = f"{median:.1f} s per epoch ({rate:,.0f} {result['unit']}/s)" if result.get("per_epoch") else \
        f"{rate:,.0f} {result['unit']}/s"
    runs = ", ".join(f"{s:.2f}" for s in result["seconds"])
    return (f"| {task} | {result['split']} | {result['units']:,} {result['unit']} | {what} | {runs} "
            f"| {result['flops_per_unit'] / 1e6:,.2f} | {achieved:.1f} | {ceiling:,.0f} | {achieved / peak:.1%} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS))
    parser.add_argument("--runtimes", nargs="+", choices=RUNTIMES, default=list(RUNTIMES),
                        help="inference runtimes to time export and de-identification under")
    parser.add_argument("--sentences", type=int, help="random training sentences for the training tasks "
                                                      "(default: all of the training splits)")
    parser.add_argument("--tagger-units", type=int, nargs="+", default=[128],
                        help="LSTM units per direction of the tagger tasks' taggers, each timed in turn (the server's "
                             "pooled tagger: 256)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each task after an untimed one")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--results-name", default="speed")
    args = parser.parse_args()
    if not DATA.is_dir():
        sys.exit(f"PhysioNet deid not found at {DATA} (it lives in ../shared/data beside the repository)")
    peak, small = matmul_gflops(4096, 4096, 4096), matmul_gflops(BATCH_SIZE, 256, 512)
    print(f"float32 matrix product: {peak:.0f} GFLOP/s (4096^3), {small:.0f} GFLOP/s (32 x 256 x 512)", flush=True)
    results = {}
    with tempfile.TemporaryDirectory() as directory:
        bench = Bench(Path(directory), args.sentences, args.seed)
        gc.freeze()  # the bench's own data, like the objects the `deidpool` command freezes, is no task's garbage
        for task in args.tasks:
            for runtime in args.runtimes if task in RUNTIME_TASKS else [None]:
                for units in args.tagger_units if task in TAGGER_TASKS else [None]:
                    label = f"{task} ({runtime})" if runtime else f"{task} ({units} units)" if units else task
                    if runtime:
                        os.environ["DEIDPOOL_RUNTIME"] = runtime
                    load = os.getloadavg()[0]
                    options = {"units": units} if units else {}
                    results[label] = {**RUNNERS[task](bench, args.repeats, **options), "load_before": load}
                    print(_row(label, results[label], peak), flush=True)
            os.environ.pop("DEIDPOOL_RUNTIME", None)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    machine = (f"{len(os.sched_getaffinity(0))} CPU cores, {platform.machine()}, Python {platform.python_version()}, "
               f"TensorFlow {tf.__version__}, TensorFlow pools: "
               f"{tf.config.threading.get_inter_op_parallelism_threads()} operations at once x "
               f"{tf.config.threading.get_intra_op_parallelism_threads()} threads, GPU: "
               f"{', '.join(d.name for d in tf.config.list_logical_devices('GPU')) or 'none'}")
    lines = [f"# Speed (commit {commit})", "", f"{machine}. float32 matrix product: {peak:.0f} GFLOP/s at 4096 x "
             f"4096 x 4096 (the ceiling below), {small:.0f} GFLOP/s at 32 x 256 x 512 (a BiLSTM step's size). Median "
             f"of {args.repeats} runs after an untimed one; FLOPs counted from the models' shapes (training: 3 x "
             "forward).", "",
             "| task | data | size | median | runs s | MFLOP per unit | GFLOP/s achieved | ceiling per s | "
             "fraction of ceiling |", "|---|---|---:|---|---|---:|---:|---:|---:|"]
    lines += [_row(task, result, peak) for task, result in results.items()]
    if "p3-epoch" in results:
        parts = results["p3-epoch"]["parts_s"]
        lines += ["", "P3 epoch parts (median s): " + ", ".join(f"{part} {statistics.median(s):.1f}"
                                                                  for part, s in parts.items())]
    write_results(args.results_name, "\n".join(lines), {"machine": machine, "commit": commit, "peak_gflops": peak,
                                                        "batch_gflops": small, "repeats": args.repeats,
                                                        "tasks": results})


if __name__ == "__main__":
    main()
