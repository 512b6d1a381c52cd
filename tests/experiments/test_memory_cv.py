"""experiments/memory_cv.py on hand-made folds (nothing is trained): each fold's memory comes from
the other folds' labels only, and the report scores the layer alone against it with its interval."""

import memory_cv
import tagger_baselines
from deidpool.corpus.document import Document, Span
from deidpool.corpus.folds import fold_split


def note(note_id: str, text: str, *names: str) -> Document:
    return Document(note_id, text, tuple(Span(text.index(n), text.index(n) + len(n), "PTName", n) for n in names))


NOTES = [note("p1-a", "Seen by Kowalczyk today.", "Kowalczyk"), note("p1-b", "Kowalczyk called back.", "Kowalczyk"),
         note("p2-a", "Kowalczyk visited, Abernathy too.", "Kowalczyk", "Abernathy"),
         note("p3-a", "Abernathy is well.", "Abernathy"), note("p4-a", "Zyskowski is well.", "Zyskowski")]


def patient(document: Document) -> str:
    return document.id.split("-")[0]


def test_a_folds_memory_comes_from_the_other_folds_only(monkeypatch):
    monkeypatch.setattr(tagger_baselines, "cv_documents", lambda: (NOTES, set()))
    monkeypatch.setattr(tagger_baselines, "patient", patient)
    tests = [fold_split(NOTES, fold, 4, 0, group=patient)[1] for fold in range(4)]
    assert sorted(len({patient(d) for d in test}) for test in tests) == [1, 1, 1, 1]  # a patient a fold
    # the tagger finds nothing
    rows = [{"fold": fold, "folds": 4, "fold_seed": 0, "predicted": {d.id: [] for d in test}}
            for fold, test in enumerate(tests)]
    tested, systems = memory_cv.fold_notes(rows, [0.9])
    assert sorted(d.id for d in tested) == sorted(d.id for d in NOTES)
    found = {d.id: [s.text for s in d.spans] for d in systems["patterns + memory (0.9)"]}
    assert found == {"p1-a": ["Kowalczyk"], "p1-b": ["Kowalczyk"], "p2-a": ["Kowalczyk", "Abernathy"],
                     "p3-a": ["Abernathy"], "p4-a": []}  # Zyskowski: labeled in its own fold only
    assert all(d.spans == () for d in systems["patterns"])
    numbers = memory_cv.scores(tested, systems)
    assert numbers["scores"]["patterns"]["recall"] == 0.0
    assert numbers["scores"]["patterns + memory (0.9)"]["recall"] == 5 / 6
    difference, low, high = numbers["differences"]["patterns + memory (0.9)"]
    assert difference > 0 and low <= difference <= high
    run = {"command": "python experiments/memory_cv.py", "commit": "abc1234", "date": "2020-01-02",
           "predictions": "baselines_cv5.json"}
    text = memory_cv.report({"bars": [0.9], **numbers, "record": run})
    assert "2020-01-02, commit abc1234; command `python experiments/memory_cv.py`; fold predictions of " \
           "`baselines_cv5.json`" in text and "; 5 notes." in text
    assert "| patterns | 0.0000 | 0.0000 | 0.0000 | - |" in text
    assert f"| patterns + memory (0.9) | 1.0000 | 0.8333 | 0.9091 | {100 * difference:+.2f} [" in text
