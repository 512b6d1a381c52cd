"""A tiny untrained pipeline (random word vectors, representer and tagger of a few units)
published as a provider-signed bundle: for tests and load experiments of the plumbing
(bundles, contributions, the server), where the weights do not matter."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def publish_tiny_pipeline(folder: str | Path, signing_key: Ed25519PrivateKey, words: Iterable[str], tags: list[str],
                          *, embedding_dim: int = 8, repr_size: int = 6, units: int = 4, seed: int = 0,
                          chars: bool = False) -> Path:
    """Write `folder`/vectors.txt (random vectors of `words`), the run `folder`/run (config,
    metrics, untrained models) and its bundle `folder`/pipeline.tar signed with
    `signing_key`; returns the bundle's path. Contributions for it have dimension `repr_size`
    and tag ids below len(`tags`); with `chars` the representer reads characters too."""
    from deidpool.representer.bundle import publish_run
    from deidpool.representer.representation import build_representer, save_representer
    from deidpool.representer.tagger import build_tagger

    folder = Path(folder)
    run = folder / "run"
    (run / "models").mkdir(parents=True)
    rng = np.random.default_rng(seed)
    vectors = folder / "vectors.txt"
    vectors.write_text("".join(f"{word} {' '.join(f'{x:.4f}' for x in rng.normal(size=embedding_dim))}\n"
                               for word in words))
    save_representer(build_representer(embedding_dim, repr_size, units, use_chars=chars),
                     run / "models" / "representer.keras")
    build_tagger(repr_size, len(tags), lstm_units=units).save(run / "models" / "tagger.keras")
    (run / "config.json").write_text(json.dumps({"embeddings": f"glove-text:{vectors}", "tags": tags,
                                                 "neighbours": 100, "procedure": "three-phase"}))
    (run / "metrics.json").write_text(json.dumps({"val_loss": 1.5}))
    publish_run(run, signing_key, folder / "pipeline.tar")
    return folder / "pipeline.tar"
