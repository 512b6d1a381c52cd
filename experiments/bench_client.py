"""Speed of the institution's client: export throughput on PhysioNet `site_a`, de-identification
throughput on `test`, peak memory and contribution size; writes results/speed/client_speed.md and .json.

The models have the production size (GloVe 50d, representer BiLSTM 128 -> d = 50, tagger
2 x BiLSTM 128 + CRF) but are untrained: speed does not depend on the weights. Each task runs
in a fresh process, so its peak memory (ru_maxrss) is its own.
"""

from __future__ import annotations

import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_files import results_file

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "physionet-deid"
RUNS = 3
SPILL_BUDGET = 1 << 20
TASKS = {  # name -> (description, split)
    "export": ("export, float16 (in-memory shuffle)", "site_a"),
    "export-float32": ("export, float32 (in-memory shuffle)", "site_a"),
    "export-spilled": (f"export, float16, shuffle spilled to disk ({SPILL_BUDGET >> 20} MiB budget)", "site_a"),
    "deidentify": ("de-identification to redacted text", "test"),
}


def prepare(folder: Path) -> None:
    """Production-size untrained models published as a signed pipeline, and the keys."""
    import keras

    from deidpool.client.identity import create_institution_keys
    from deidpool.corpus.formats import read_corpus
    from deidpool.corpus.tagging import tag_vocabulary
    from deidpool.representer import keys
    from deidpool.representer.bundle import publish_run
    from deidpool.representer.representation import build_representer, save_representer
    from deidpool.representer.tagger import build_tagger

    keras.utils.set_random_seed(0)
    labels = {span.source_type for document in read_corpus(DATA, "physionet") for span in document.spans}
    tags = tag_vocabulary(labels)
    run = folder / "run"
    (run / "models").mkdir(parents=True)
    save_representer(build_representer(50, repr_size=50, lstm_units=128), run / "models" / "representer.keras")
    build_tagger(50, len(tags), lstm_units=128).save(run / "models" / "tagger.keras")
    (run / "config.json").write_text(json.dumps({"embeddings": "glove", "tags": tags}))
    provider = keys.create_provider_keys(folder / "keys")
    create_institution_keys(folder / "keys", "site-a")
    keys.create_server_keys(folder / "keys")
    publish_run(run, keys.load_private_key(provider.private, keys.SIGNING), folder / "pipeline")


def run_task(task: str, folder: Path) -> dict:
    """RUNS timed repetitions of `task` in this process (the first includes compiling)."""
    from deidpool.client.deidentify import find_phi, write_deidentified
    from deidpool.client.export import ExportSettings, export_contribution
    from deidpool.corpus.formats import read_corpus
    from deidpool.representer import keys
    from deidpool.representer.bundle import open_bundle

    started = time.perf_counter()
    pipeline = open_bundle(folder / "pipeline", keys.load_public_key(folder / "keys" / "provider.pub", keys.SIGNING))
    embeddings = pipeline.load_embeddings()
    documents = read_corpus(DATA, "physionet", split=TASKS[task][1])
    setup = time.perf_counter() - started
    runs, cpu, size, sentences = [], [], None, None
    for run in range(RUNS):
        out = folder / f"{task}-{run}"
        start, start_cpu = time.perf_counter(), time.process_time()
        if task == "deidentify":
            found = find_phi(documents, pipeline, embeddings)
            write_deidentified(found, out, "text", rng=random.Random(run))
        else:
            settings = ExportSettings(dtype="float32" if task == "export-float32" else "float16",
                                      **({"memory_bytes": SPILL_BUDGET} if task == "export-spilled" else {}))
            header = export_contribution(
                documents, pipeline, embeddings, out, settings, institution="site-a",
                signing_key=keys.load_private_key(folder / "keys" / "institution.key", keys.SIGNING),
                server_key=keys.load_public_key(folder / "keys" / "server-encryption.pub", keys.ENCRYPTION),
                progress=False).header
            size, sentences = out.stat().st_size, header.sentences
        runs.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return {"task": task, "documents": len(documents), "sentences": sentences, "bytes": size, "setup_s": setup,
            "runs_s": runs, "cpu_s": cpu, "load_average": os.getloadavg()[0],
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    if not DATA.is_dir():
        sys.exit(f"reference corpus not found at {DATA} (expected ../shared/data beside the repository); skipped")
    with tempfile.TemporaryDirectory() as directory:
        subprocess.run([sys.executable, __file__, "prepare", directory], check=True, cwd=REPO)
        rows = []
        for task in TASKS:
            child = subprocess.run([sys.executable, __file__, task, directory], check=True, cwd=REPO,
                                   capture_output=True, text=True)
            rows.append(json.loads(child.stdout.splitlines()[-1]))
    for row in rows:
        warm = statistics.median(row["runs_s"][1:])
        row["warm_s"], row["warm_cpu_s"] = warm, statistics.median(row["cpu_s"][1:])
        row["per_s"] = (row["sentences"] or row["documents"]) / warm
        row["unit"] = "notes/s" if row["task"] == "deidentify" else "sentences/s"
        row["kib_per_1000_sentences"] = row["bytes"] / row["sentences"] * 1000 / 1024 if row["bytes"] else None
    table = ["| task | split | notes | sentences | first run s | warm s (median) | warm CPU s | throughput "
             "| peak RSS MiB | KiB per 1,000 sentences | load average |", "|---|---|" + "---:|" * 9]
    for row in rows:
        size = f"{row['kib_per_1000_sentences']:.1f}" if row["kib_per_1000_sentences"] else ""
        table.append(f"| {TASKS[row['task']][0]} | {TASKS[row['task']][1]} | {row['documents']:,} "
                     f"| {row['sentences'] or ''} | {row['runs_s'][0]:.2f} | {row['warm_s']:.2f} "
                     f"| {row['warm_cpu_s']:.2f}"
                     f" | {row['per_s']:,.0f} {row['unit']} | {row['peak_rss_mib']:,.0f} | {size} "
                     f"| {row['load_average']:.1f} |")
    machine = f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}"
    intro = (f"# Client speed\n\n{machine}; untrained production-size models (GloVe 50d, representer BiLSTM 128 "
             f"-> d = 50, tagger 2 x BiLSTM 128 + CRF); {RUNS} runs per task in one fresh process each (the first "
             "compiles the models; throughput uses the median of the others). Times exclude loading the bundle "
             "and GloVe (setup_s in the JSON). CPU s counts both cores (TensorFlow runs 2 threads). Peak RSS is the "
             "whole process's, TensorFlow and GloVe included. Load average: the machine's 1-minute load after the "
             "task (other jobs share these 2 cores; above ~1 the wall times are inflated).\n")
    markdown = "\n".join([intro, *table]) + "\n"
    print(markdown)
    results_file("client_speed", ".md").parent.mkdir(parents=True, exist_ok=True)
    results_file("client_speed", ".md").write_text(markdown, encoding="utf-8")
    results_file("client_speed", ".json").write_text(
        json.dumps({"machine": machine, "runs": RUNS, "rows": rows}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "prepare":
        prepare(Path(sys.argv[2]))
    elif len(sys.argv) == 3:
        print(json.dumps(run_task(sys.argv[1], Path(sys.argv[2]))))
    else:
        main()
