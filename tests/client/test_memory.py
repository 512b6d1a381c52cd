"""The institution's PHI memory: which labeled strings it keeps, where it finds them again, its
owner-only file, and `client remember` / `client deidentify --memory` end to end."""

import json
import stat

import pytest
from typer.testing import CliRunner

from deidpool.cli import app
from deidpool.client.memory import (
    PhiMemoryError,
    load_memory,
    memory_patterns,
    remembered_phi,
    save_memory,
)
from deidpool.client.patterns import with_patterns
from deidpool.corpus import Document, Span


def labeled(text: str, *phi: tuple[str, str]) -> Document:
    """`text` with a gold span at the first occurrence of each (string, label) of `phi`."""
    spans = []
    for string, label in phi:
        start = text.index(string)
        spans.append(Span(start, start + len(string), label, string))
    return Document(str(len(text)), text, tuple(spans))


NOTES = [labeled("Ingresa en el Hospital La Paz de Madrid.", ("Hospital La Paz", "HOSPITAL"), ("Madrid", "CITY")),
         labeled("Alta del Hospital La Paz a Madrid el 12.", ("Hospital La Paz", "HOSPITAL"), ("Madrid", "CITY"),
                 ("12", "DATE")),
         labeled("Vive con Rosa en Sevilla; piel rosa.", ("Rosa", "PATIENT"), ("Sevilla", "CITY")),
         labeled("Rosa ingresa. Rosa mejora. Rosa cena.", ("Rosa", "PATIENT")),
         labeled("Madrid es MADRIDISTA, Dr. Al.", ("Madrid", "CITY"), ("Al", "DOCTOR"))]


def test_the_memory_keeps_strings_the_notes_label_almost_wherever_they_occur():
    memory = remembered_phi(NOTES)
    assert memory["Hospital La Paz"] == {"label": "HOSPITAL", "labeled": 2, "occurrences": 2}
    assert memory["Madrid"] == {"label": "CITY", "labeled": 3, "occurrences": 3}  # not inside "MADRIDISTA"
    assert memory["Sevilla"]["labeled"] == 1
    # "Rosa" is labeled in 2 of its 4 case-sensitive occurrences ("rosa" the colour is another word)
    assert "Rosa" not in memory and "Rosa" in remembered_phi(NOTES, min_precision=0.5)
    assert "12" not in memory and "Al" not in memory  # numbers and strings under 3 characters


def test_the_memory_finds_its_strings_as_whole_words_under_the_pipeline_s_labels():
    memory = remembered_phi(NOTES)
    found = with_patterns(Document("new", "Traslado de Madrid al Hospital La Paz; no MADRIDISTA.", ()),
                          memory_patterns(memory))
    assert [(span.text, span.source_type) for span in found.spans] == [("Madrid", "CITY"),
                                                                      ("Hospital La Paz", "HOSPITAL")]
    # in a MEDDOCAN tag set a CITY is a TERRITORIO, a HOSPITAL stays one
    labels = {pattern.label for pattern in memory_patterns(memory, ["TERRITORIO", "HOSPITAL", "FECHAS"])}
    assert labels == {"TERRITORIO", "HOSPITAL"}
    assert memory_patterns({}) == ()


def test_the_memory_file_is_its_owner_s_alone_and_bad_files_name_the_file_not_the_phi(tmp_path):
    memory = remembered_phi(NOTES)
    path = tmp_path / "memory.json"
    path.write_text("old")
    path.chmod(0o644)
    save_memory(memory, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_memory(path) == memory
    for content, field in (("{not json", "not a readable PHI memory"), ('{"format": "x"}', "field 'format'"),
                           ('{"format": "deidpool-phi-memory/1", "entries": {"Madrid": 3}}', "field 'entries'")):
        path.write_text(content)
        with pytest.raises(PhiMemoryError) as error:
            load_memory(path)
        assert str(path) in str(error.value) and field in str(error.value) and "Madrid" not in str(error.value)
    with pytest.raises(PhiMemoryError, match="cannot write the PHI memory"):
        save_memory(memory, tmp_path / "missing" / "memory.json")


def test_remember_then_deidentify_with_the_memory(tmp_path, notes_dir, documents, pipeline_path, key_files):
    runner = CliRunner()
    result = runner.invoke(app, ["client", "remember", "--notes", str(notes_dir), "--format", "i2b2",
                                 "--out", str(tmp_path / "memory.json")])
    assert result.exit_code == 0, result.output
    memory = load_memory(tmp_path / "memory.json")
    assert memory and f"remembered {len(memory)} PHI strings of {len(documents)} notes" in result.output
    assert not any(text in result.output for text in memory)  # counts only, never the PHI
    notes = tmp_path / "notes"
    notes.mkdir()
    for document in documents[:4]:
        (notes / f"{document.id}.txt").write_text(document.text)
    result = runner.invoke(app, ["client", "deidentify", "--pipeline", str(pipeline_path), "--provider-key",
                                 str(key_files.provider.public), "--notes", str(notes), "--no-patterns",
                                 "--memory", str(tmp_path / "memory.json"), "--out", str(tmp_path / "spans.jsonl"),
                                 "--format", "json"])
    assert result.exit_code == 0, result.output
    found = {row["id"]: row for row in map(json.loads, (tmp_path / "spans.jsonl").read_text().splitlines())}
    patterns = memory_patterns(memory)
    for document in documents[:4]:
        spans = found[document.id]["spans"]
        for pattern in patterns:  # every occurrence of a remembered string lies inside a span written
            for span in pattern.spans(document.text):
                assert any(s["start"] <= span.start and span.end <= s["end"] for s in spans), span
    broken = tmp_path / "broken.json"
    broken.write_text("[]")
    result = runner.invoke(app, ["client", "deidentify", "--pipeline", str(pipeline_path), "--provider-key",
                                 str(key_files.provider.public), "--notes", str(notes), "--memory", str(broken),
                                 "--out", str(tmp_path / "x.jsonl"), "--format", "json"])
    assert result.exit_code == 2 and f"{broken}: not a PHI memory" in result.output
