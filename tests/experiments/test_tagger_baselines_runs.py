"""experiments/tagger_baselines.py's run folders (nothing is trained): each configuration's folder
records what trains it before training starts."""

import json

import pytest

import tagger_baselines
from results_files import RUN_RECORD


class TrainingStarts(Exception):
    """Raised by the stand-in trainer, carrying the run folder's run record."""


def test_a_configuration_s_run_folder_records_what_trains_it(tmp_path, monkeypatch):
    def train(train, valid, run_dir, settings, **options):
        raise TrainingStarts(json.loads((run_dir / RUN_RECORD).read_text()))

    monkeypatch.setattr(tagger_baselines, "load_embeddings", lambda spec: None)
    monkeypatch.setattr(tagger_baselines, "train_tagger_run", train)
    config = tagger_baselines.configurations([3])[0]
    with pytest.raises(TrainingStarts) as stopped:
        tagger_baselines.run(config, ([], [], []), 4, 2, tmp_path, "val_loss")
    run = stopped.value.args[0]
    assert {key: run[key] for key in config} == config
    assert (run["max_epochs"], run["patience"], run["monitor"]) == (4, 2, "val_loss")
    assert run["commit"] == tagger_baselines.git_commit()
