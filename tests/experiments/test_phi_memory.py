"""experiments/phi_memory.py's layers and report on hand-made notes and counts (nothing is tagged)."""

import json

import federation
import phi_memory
from deidpool.corpus import Document, Span


def test_each_layer_merges_more_spans_into_the_tagger_s():
    text = "Visto en Cretas el 3 de marzo de 2019."
    found = [Document("n", text, (Span(0, 5, "NOMBRE_SUJETO_ASISTENCIA", "Visto"),))]
    memory = {"Cretas": {"label": "TERRITORIO", "labeled": 3, "occurrences": 3}}
    layers = phi_memory.layered(found, "es", memory)
    spans = {layer: [span.text for span in notes[0].spans] for layer, notes in layers.items()}
    assert spans[""] == ["Visto"]
    assert "Cretas" not in spans["+patterns"] and "3 de marzo de 2019" in spans["+patterns"]
    assert spans["+patterns+memory"] == [*spans["+patterns"][:1], "Cretas", *spans["+patterns"][1:]]


def test_the_report_pairs_each_comparison_on_the_same_notes():
    good, worse = [[9, 1, 1]] * 20, [[8, 1, 2]] * 20
    names = {name for first, second, *_ in phi_memory.comparisons(["site_a"]) for name in (first, second)}
    per_seed = {0: {measure: {name: worse if name.startswith("pooled") and "memory" not in name else good
                              for name in names} for measure in federation.MEASURES.values()}}
    rows = phi_memory.paired(per_seed, [0], ["site_a"])
    run = {"command": "python experiments/phi_memory.py --federation fed", "commit": "abc1234", "date": "2020-01-02",
           "corpus": "meddocan", "test_notes": "notes/test", "federation": "fed", "pooled": "pooled",
           "memory_sizes": {"site_a": 2, "all": 7}}
    text = phi_memory.report(json.loads(json.dumps({"seeds": [0], "paired": rows, "record": run})))  # as stored
    assert f"2020-01-02, commit abc1234; seeds [0]; test notes `notes/test`. Command: `{run['command']}`. " \
           "The pooled pipeline is `fed:pooled`." in text
    gap = 100 * (federation.f1(worse) - federation.f1(good))
    assert f"| representation gap: pooled pipeline - raw text (all notes) | alone | {gap:+.1f} [" in text
    assert "| + patterns + memory of all parties | +0.0 [+0.0, +0.0]" in text
    assert f"| site_a's memory's gain: pooled pipeline | + patterns + site_a's memory against + patterns | " \
           f"{-gap:+.1f} [" in text
    assert "site_a 2, all parties 7" in text
    trained = phi_memory.report({"seeds": [0], "paired": rows, "record": {**run, "trained_at": ["0aa0000"]}})
    assert trained == text.replace("commit abc1234", "trained at 0aa0000; reported at abc1234")
    assert len(rows["entity_strict"]) == len(phi_memory.comparisons(["site_a"]))


def test_a_seeds_counts_score_every_tagger_and_layer_each_comparison_needs(monkeypatch):
    text = "Visto en Cretas el 3 de marzo de 2019."
    test = [Document("n", text, (Span(9, 15, "TERRITORIO", "Cretas"), Span(19, 37, "FECHAS", text[19:37])))]
    tagged = {"raw": (Span(9, 15, "TERRITORIO", "Cretas"),), "pooled": ()}  # the pooled tagger finds nothing

    def found_documents(corpus, spec, seed, notes):
        name = spec.partition(":")[2]
        return [Document(d.id, d.text, tagged.get(name, ())) for d in notes]

    monkeypatch.setattr(phi_memory, "found_documents", found_documents)
    assert phi_memory.taggers("fed", "diagnosis/x", ["site_a"]) == {"raw": "fed:raw", "pooled": "fed:diagnosis/x",
                                                                     "raw-site_a": "fed:raw-site_a"}
    memories = {"all": {"Cretas": {"label": "TERRITORIO", "labeled": 2, "occurrences": 2}}, "site_a": {}}
    counts = phi_memory.seed_counts(federation.CORPORA["meddocan"], "fed", "pooled", 0, test, memories, ["site_a"])
    entity = counts["entity_strict"]
    needed = {name for first, second, *_ in phi_memory.comparisons(["site_a"]) for name in (first, second)}
    assert needed <= set(entity)
    assert entity["pooled"] == [[0, 0, 2]] and entity["raw"] == [[1, 0, 1]]
    assert entity["pooled+patterns"] == [[1, 0, 1]]  # the date pattern
    assert entity["pooled+patterns+memory"] == [[2, 0, 0]]  # and the memory's "Cretas"
    assert entity["pooled+patterns+memory@site_a"] == [[1, 0, 1]]  # site_a remembers nothing
