"""Throughput of the pooled tagger's training on one worker and on a cluster of CPU workers
(MultiWorkerMirroredStrategy over loopback), by pool size (issue #20: distributed training).
Writes results/speed/distributed_training.{md,json}.

    python experiments/bench_distributed.py [--sizes 2000 10000] [--epochs 3] [--workers 2] [--lstm-units 128]
        [--repeats 1] [--pinned-only]

(about 10 minutes per round with the defaults on the project's 2-core machine).

For each size, synthetic pooled data (shards of at most 1,000 sentences, as contributions are,
d = 50 float32 vectors, 5 to 39 tokens per sentence, PHI where the second component is above 1,
and 5% more sentences for validation) streamed into `deidpool.server.pooled.train_pooled`, which fresh
processes of this script run (--worker) in these set-ups:
- one worker, batch 32 (what a queue worker does), on all the cores;
- N workers sharing those cores, 32 sentences per worker per step (a global batch of 32 N: the
  usual way to scale out, fewer and larger steps);
- N workers sharing those cores, a global batch of 32 (32 / N per worker: the same steps as one
  worker, the same results up to rounding);
- one worker pinned to C cores, and N workers each pinned to C cores of its own, 32 sentences per
  worker (C = --cores-per-worker, by default the cores / N): as if each worker brought its own
  machine, the way a cluster adds compute.
Throughput: training sentences / epoch seconds (training and validation, as the run records
them), the best epoch after the first (which traces the TensorFlow functions); speed-up against
one worker of the same round. With --repeats R every set-up runs once per round, R rounds one
after the other, and the summary reads the median speed-up over the rounds. Every worker reads
and batches the whole pool and keeps its part of each batch.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from results_files import git_commit, write_results

DIM, PER_SHARD, BATCH = 50, 1000, 32
TAGS = ["O", "B-NAME", "I-NAME"]


def shard(seed: int, number: int, count: int):
    """`count` sentences of shard `number`: random vectors, PHI ("B-NAME") where the second component is above 1."""
    rng = np.random.default_rng([seed, number])
    for length in rng.integers(5, 40, count):
        vectors = rng.normal(size=(length, DIM)).astype(np.float32)
        yield vectors, rng.integers(0, 5, length).astype(np.int8), (vectors[:, 1] > 1).astype(np.int32)


def stream(sentences: int, seed: int):
    from deidpool.representer.dataset import SentenceStream

    counts = [min(PER_SHARD, sentences - start) for start in range(0, sentences, PER_SHARD)]
    return SentenceStream(tuple(functools.partial(shard, seed, number, count) for number, count in enumerate(counts)),
                          sentences, DIM, 39)


def worker(run_dir: str, sentences: int, batch_size: int, epochs: int, lstm_units: int, seed: int) -> None:
    """Train as one process or as the worker of TF_CONFIG's cluster; print the final metrics
    and, on the chief, each epoch's record, as JSON lines."""
    from deidpool.representer.threads import configure_threads

    configure_threads()
    from deidpool.server.pooled import PooledData, train_pooled

    train, valid = stream(sentences, seed), stream(max(100, sentences // 20), seed + 1)
    tag_counts = sum(np.bincount(tags, minlength=len(TAGS)) for part in train.shards for _, _, tags in part())
    data = PooledData(train, valid, {"synthetic": {"train": len(train), "valid": len(valid)}}, tag_counts)
    metrics = train_pooled(data, run_dir, tags=TAGS, representer_id="synthetic", contributions=["synthetic"],
                           max_epochs=epochs, patience=epochs, seed=seed, lstm_units=lstm_units,
                           batch_size=batch_size, on_epoch=lambda record: print(json.dumps({"epoch": record})))
    print(json.dumps({"metrics": metrics}), flush=True)


def measure(sentences: int, workers: int, batch_size: int, cores: int | None, args) -> dict:
    """Train in `workers` fresh processes (each pinned to `cores` cores of its own, unless
    None); the chief's epoch records and the wall time."""
    from deidpool.representer.distribution import loopback_cluster

    env = {key: value for key, value in os.environ.items() if key != "TF_CONFIG"}
    env.update(CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2")
    available = sorted(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory(prefix="bench-distributed-") as folder:
        command = [sys.executable, __file__, "--worker", str(Path(folder) / "run"), "--sizes", str(sentences),
                   "--batch-size", str(batch_size), "--epochs", str(args.epochs), "--lstm-units",
                   str(args.lstm_units), "--seed", str(args.seed)]
        busy, started = busy_cores(), time.perf_counter()
        processes = []
        for index, config in enumerate(loopback_cluster(workers) if workers > 1 else [None]):
            pinned = [] if cores is None else ["taskset", "-c", ",".join(map(str, available[index * cores:][:cores]))]
            with open(Path(folder) / f"{index}.log", "w") as log:
                processes.append(subprocess.Popen(pinned + command, stdout=subprocess.PIPE, stderr=log, text=True,
                                                  env=env if config is None else {**env, "TF_CONFIG": config}))
        outputs = [process.communicate()[0] for process in processes]
        wall = time.perf_counter() - started
        for index, process in enumerate(processes):
            if process.returncode:
                raise RuntimeError(f"worker {index} failed:\n{(Path(folder) / f'{index}.log').read_text()[-3000:]}")
    records = [json.loads(line) for line in outputs[0].splitlines()]
    seconds = [record["epoch"]["seconds"] for record in records if "epoch" in record]
    metrics = next(record["metrics"] for record in records if "metrics" in record)
    return {"workers": workers, "batch_size": batch_size, "cores_per_worker": cores,
            "epoch_seconds": [round(s, 2) for s in seconds],
            "sentences_per_s": round(sentences / min(seconds[1:]), 1), "wall_s": round(wall, 1),
            "val_loss": metrics["val_loss"], "val_f1": metrics["val_f1"], "busy_cores_before": busy}


def speedups(size: dict) -> list[float]:
    """Each run's throughput over that of the one-worker run of the same round on the same cores
    (all, or pinned)."""
    alone = {(run["round"], run["cores_per_worker"]): run["sentences_per_s"]
             for run in size["runs"] if run["workers"] == 1}
    return [run["sentences_per_s"] / alone[run["round"], run["cores_per_worker"]] for run in size["runs"]]


def setups(result: dict) -> list[tuple[int, dict, float, float, float]]:
    """Per pool size and set-up (workers, global batch, cores): its first run and the median,
    lowest and highest speed-up over the rounds."""
    rows = []
    for size in result["sizes"]:
        by_setup: dict[tuple, list] = {}
        for run, speedup in zip(size["runs"], speedups(size)):
            by_setup.setdefault((run["workers"], run["batch_size"], run["cores_per_worker"]), []).append((run, speedup))
        for runs in by_setup.values():
            values = [speedup for _, speedup in runs]
            rows.append((size["sentences"], runs[0][0], statistics.median(values), min(values), max(values)))
    return rows


def cluster_medians(result: dict) -> list[tuple[int, dict, float]]:
    """Per pool size and cluster set-up (more than one worker): its first run and median speed-up."""
    return [(sentences, run, median) for sentences, run, median, _, _ in setups(result) if run["workers"] > 1]


def report(result: dict) -> str:
    workers, p, cores = result["workers"], result["parameters"], result["cores"]
    rounds = p["repeats"]
    lines = [f"# Distributed training of the pooled tagger: {workers} CPU workers against one", "",
             f"{result['date']}, commit {result['commit']}, {result['machine']}. `deidpool.server.pooled.train_pooled` "
             f"on synthetic streamed pools (d = {DIM}, 5 to 39 tokens per sentence, shards of {PER_SHARD:,} "
             f"sentences, 5% more for validation), a tagger of {p['lstm_units']} LSTM units, {p['epochs']} epochs "
             f"per run in fresh processes. `{workers} x B`: MultiWorkerMirroredStrategy, {workers} processes on "
             "this machine over loopback, B sentences per worker per step. Cores: all of them shared by the "
             "processes, or C cores pinned to each process (`taskset`). Throughput: training sentences per second "
             "of the fastest epoch after the first (an epoch: training and validation); speed-up: against one "
             "worker on the same cores (all, or C pinned) in the same round. "
             f"{rounds} round(s): every set-up once per round, the rounds one after the other, so that a slower "
             "or faster spell of the machine falls on all set-ups alike. Before each run the cores that other "
             "processes kept busy are measured (in the JSON, and their range below).", "",
             "| pool (training sentences) | round | set-up | cores | global batch | epoch s | sentences/s | "
             "speed-up | val loss | val PHI F1 |", "|---:|---:|---|---|---:|---|---:|---:|---:|---:|"]
    for size in result["sizes"]:
        for run, speedup in zip(size["runs"], speedups(size)):
            lines.append(f"| {size['sentences']:,} | {run['round'] + 1} | {setup_name(run)} | {cores_name(run, cores)} "
                         f"| {run['batch_size']} | {', '.join(map(str, run['epoch_seconds']))} | "
                         f"{run['sentences_per_s']:,.0f} | {speedup:.2f}x | {run['val_loss']:.4g} | "
                         f"{run['val_f1']:.3f} |")
    if rounds > 1:
        lines += ["", f"Median speed-up over the {rounds} rounds (lowest - highest):", "",
                  "| pool (training sentences) | set-up | cores | median speed-up | range |", "|---:|---|---|---:|---|"]
        lines += [f"| {sentences:,} | {setup_name(run)} | {cores_name(run, cores)} | {median:.2f}x | "
                  f"{low:.2f}x - {high:.2f}x |" for sentences, run, median, low, high in setups(result)]
    return "\n".join(lines + ["", *summary(result), "", explanation(result)])


def setup_name(run: dict) -> str:
    return "1 worker" if run["workers"] == 1 else f"{run['workers']} x {run['batch_size'] // run['workers']}"


def cores_name(run: dict, cores: int) -> str:
    return f"all {cores} shared" if run["cores_per_worker"] is None else f"{run['cores_per_worker']} each"


def summary(result: dict) -> list[str]:
    """Per kind of cores (shared, pinned): the best cluster set-up's (median) speed-up at each pool
    size and the crossover (the smallest pool from which on the cluster is at least as fast as one
    worker); then the target."""
    workers = result["workers"]
    clusters = cluster_medians(result)
    lines = []
    for pinned, cores in ((False, f"sharing all {result['cores']} cores"), (True, "each pinned to cores of its own")):
        best = {}
        for sentences, run, speedup in clusters:
            if (run["cores_per_worker"] is not None) == pinned:
                best[sentences] = max(best.get(sentences, 0.0), speedup)
        if best:
            above = [sentences for sentences in best
                     if all(best[larger] >= 1 for larger in best if larger >= sentences)]
            lines.append(f"{workers} workers {cores}, best set-up: " + ", ".join(
                f"{speedup:.2f}x at {sentences:,}" for sentences, speedup in best.items()) + " training sentences; "
                + (f"crossover at {min(above):,}." if above else "no crossover (slower than one worker)."))
    sentences, run, speedup = max(clusters, key=lambda cluster: cluster[2])
    lines.append(f"Target ({workers} workers >= 1.6x one worker's throughput): {'met' if speedup >= 1.6 else 'missed'}"
                 f"; best {speedup:.2f}x ({setup_name(run)}, {sentences:,} sentences).")
    return lines


def explanation(result: dict) -> str:
    """What the runs of `result` say (every number from them) and what a larger cluster needs."""
    runs = [(size["sentences"], run) for size in result["sizes"] for run in size["runs"]]
    busy = [run["busy_cores_before"] for _, run in runs]
    spread, widest = max((max(run["epoch_seconds"][1:]) / min(run["epoch_seconds"][1:]), sentences)
                         for sentences, run in runs)
    clusters = cluster_medians(result)
    shared = [median for _, run, median in clusters if run["cores_per_worker"] is None]
    pinned = [(sentences, median) for sentences, run, median in clusters if run["cores_per_worker"]]
    alone = [run for _, run in runs if run["workers"] == 1 and run["cores_per_worker"]]
    transfer = result["gradient_mb"] * 2 ** 20 * 8 / 1e9 * 1000  # ms per Gbit/s
    lines = [f"Reading. Other processes kept {min(busy):.1f} to {max(busy):.1f} of the {result['cores']} cores busy "
             f"in the second before each run; the timed epochs of one run differ by up to {spread:.1f}x (in the "
             f"pool of {widest:,} sentences), so single speed-ups are rough."]
    if shared:
        lines.append(f"Sharing the cores, a second worker brings no compute (one worker already uses them: TensorFlow "
                     f"runs a BiLSTM's two directions at once), and the best shared set-up reaches {max(shared):.2f}x: "
                     f"the cluster adds an all-reduce of the {result['gradient_mb']:.1f} MB of gradients every step, "
                     "its own pass of the input pipeline over the whole pool (every worker reads and batches all of "
                     "it) and steps that wait for the slower worker.")
    if pinned:
        step, cores = 1000 * BATCH / alone[-1]["sentences_per_s"], alone[-1]["cores_per_worker"]
        lines.append(f"Pinned to cores of their own, as if each brought its own machine ({cores} core(s) take "
                     f"{step:.0f} ms per {BATCH}-sentence step in the largest pool), "
                     f"{result['workers']} workers reach "
                     + ", ".join(f"{speedup:.2f}x at {sentences:,}" for sentences, speedup in pinned)
                     + " training sentences.")
    lines.append(f"Across machines the all-reduce is the new cost: a two-worker ring all-reduce moves the gradients' "
                 f"size per worker and step, about {transfer:.0f} ms at 1 Gbit/s and {transfer / 10:.0f} ms at "
                 "10 Gbit/s. With more workers, reading each contribution on one worker only (not done: every "
                 "worker decodes the whole pool) would also remove the repeated input pass.")
    return " ".join(lines)


def busy_cores(seconds: float = 1.0) -> float:
    """How many cores the machine's processes kept busy over the next `seconds` (/proc/stat;
    the 1-minute load average where there is none)."""
    stat = Path("/proc/stat")
    if not stat.exists():
        return os.getloadavg()[0]

    def sample() -> tuple[int, int]:
        ticks = [int(value) for value in stat.read_text().split("\n", 1)[0].split()[1:]]
        return sum(ticks), ticks[3] + ticks[4]  # all, idle + waiting for I/O

    (total, idle), _ = sample(), time.sleep(seconds)
    later_total, later_idle = sample()
    return os.cpu_count() * (1 - (later_idle - idle) / max(1, later_total - total))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 10000], help="training sentences per pool")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores-per-worker", type=int, help="cores of each pinned worker (default: the cores / "
                                                             "--workers; 0: no pinned set-ups)")
    parser.add_argument("--pinned-only", action="store_true", help="only the pinned set-ups (what the target reads)")
    parser.add_argument("--epochs", type=int, default=3, help="epochs per run (the first is not timed)")
    parser.add_argument("--lstm-units", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1,
                        help="rounds of all set-ups, one after the other; speed-ups are medians over them")
    parser.add_argument("--batch-size", type=int, default=BATCH, help=argparse.SUPPRESS)
    parser.add_argument("--worker", metavar="RUN_DIR", help=argparse.SUPPRESS)
    parser.add_argument("--results-name", default="distributed_training")
    args = parser.parse_args()
    if args.epochs < 2:
        parser.error("--epochs must be at least 2: the first epoch is not timed")
    if args.pinned_only and args.cores_per_worker == 0:
        parser.error("--pinned-only needs pinned set-ups: --cores-per-worker must not be 0")
    if args.worker:
        worker(args.worker, args.sizes[0], args.batch_size, args.epochs, args.lstm_units, args.seed)
        return
    cores = len(os.sched_getaffinity(0)) // args.workers if args.cores_per_worker is None else args.cores_per_worker
    planned = [] if args.pinned_only else [(1, BATCH, None), (args.workers, BATCH * args.workers, None),
                                           (args.workers, BATCH, None)]
    if cores:
        planned += [(1, BATCH, cores), (args.workers, BATCH * args.workers, cores)]
    sizes = []
    for sentences in args.sizes:
        runs = []
        for round_index in range(args.repeats):
            for workers, batch_size, pinned in planned:
                runs.append({"round": round_index, **measure(sentences, workers, batch_size, pinned, args)})
                print(json.dumps({"sentences": sentences, **runs[-1]}), flush=True)
        sizes.append({"sentences": sentences, "runs": runs})
    import tensorflow as tf

    from deidpool.representer.tagger import build_tagger

    gradient_mb = build_tagger(DIM, len(TAGS), lstm_units=args.lstm_units).count_params() * 4 / 2 ** 20
    result = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "commit": git_commit(),
              "machine": f"{len(os.sched_getaffinity(0))} CPU cores, {platform.machine()}, Python "
                         f"{platform.python_version()}, TensorFlow {tf.__version__}, no GPU used",
              "workers": args.workers, "cores": len(os.sched_getaffinity(0)), "gradient_mb": gradient_mb,
              "parameters": {"epochs": args.epochs, "lstm_units": args.lstm_units, "seed": args.seed, "dim": DIM,
                             "per_shard": PER_SHARD, "repeats": args.repeats},
              "sizes": sizes}
    write_results(args.results_name, report(result), result)


if __name__ == "__main__":
    main()
