"""experiments/tagger_layers.py on hand-made notes and stored predictions (nothing is trained)."""

import argparse

import pytest

import results_files
import tagger_layers
from deidpool.corpus import Document, Span

TEXT = "Paciente Ana Ruiz, vista en Teruel el 3 de marzo de 2019."


def gold(i):
    return Document(f"n{i}", TEXT, (Span(9, 17, "NOMBRE_SUJETO_ASISTENCIA", "Ana Ruiz"),
                                    Span(28, 34, "TERRITORIO", "Teruel"),
                                    Span(38, 56, "FECHAS", "3 de marzo de 2019")))


def result(name, seed, spans):
    return {"corpus": "meddocan", "name": name, "seed": seed, "commit": "abc",
            "predicted": {f"n{i}": spans for i in range(6)}}


def test_layers_and_configurations_are_paired_on_the_same_notes(tmp_path, monkeypatch):
    monkeypatch.setattr(results_files, "RESULTS", tmp_path)
    test = [gold(i) for i in range(6)]
    name_only = [[9, 17, "NOMBRE_SUJETO_ASISTENCIA"]]
    with_town = [*name_only, [28, 34, "TERRITORIO"]]
    results = [result("base", seed, name_only) for seed in (0, 1)] + [result("chars", seed, with_town)
                                                                       for seed in (0, 1)]
    results.append({**result("base", 2, name_only), "fold": 0})  # a cross-validation row is not one of them
    rows = tagger_layers.seed_rows(results, "meddocan")
    assert {name: sorted(by_seed) for name, by_seed in rows.items()} == {"base": [0, 1], "chars": [0, 1]}
    memory = {"Ana Ruiz": {"label": "NOMBRE_SUJETO_ASISTENCIA", "labeled": 3, "occurrences": 3}}
    notes = tagger_layers.layered_notes(rows, test, "es", memory, drop="es_city")
    args = argparse.Namespace(corpus="meddocan", base="base", results_name="baselines_x", drop="es_city")
    text, data = tagger_layers.report(args, rows, notes, test, len(memory))
    assert data["f1"]["base"] == [0.5, 0.5] and data["f1"]["chars"] == [0.8, 0.8]
    assert data["f1"]["base+patterns"] == [1.0, 1.0]  # the date pattern, and Teruel from the city list
    assert data["f1"]["base+patterns+memory"] == [1.0, 1.0] == data["f1"]["chars+patterns+memory"]
    gain = next(row for row in data["paired"] if row["comparison"] == "chars - base" and row["layer"] == "alone")
    assert gain["mean"]["difference"] == pytest.approx(30.0) and gain["mean"]["interval"] == pytest.approx([30, 30])
    cities = next(row for row in data["paired"]
                  if row["comparison"].startswith("es_city's gain") and row["layer"] == "base + pattern layer")
    assert cities["mean"]["difference"] == pytest.approx(20.0)  # without the list the town is missed: 0.8
    assert "| TERRITORIO | 12 | 12 | 0 |" in text


def test_a_seed_ensemble_is_scored_under_every_layer():
    test = [gold(i) for i in range(6)]
    ensemble = {**result("chars", 0, [[9, 17, "NOMBRE_SUJETO_ASISTENCIA"], [28, 34, "TERRITORIO"]]), "seeds": [0, 1]}
    lines, scores = tagger_layers.ensemble_lines([ensemble], test, "es", {}, "entity_strict", "source_type")
    assert scores == {"chars, ensemble of seeds 0, 1": 0.8, "chars, ensemble of seeds 0, 1+patterns": 1.0,
                      "chars, ensemble of seeds 0, 1+patterns+memory": 1.0}
    assert lines[-3].startswith("| chars, ensemble of seeds 0, 1 | alone | 0.8000 | [0.8000, 0.8000] |")
