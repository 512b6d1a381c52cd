"""experiments/novelty_breakdown.py on hand-made notes (nothing is tagged): the class of a gold
span by where its text was PHI in training, recall per class summed over seeds."""

import novelty_breakdown
from deidpool.corpus import Document, Span

PROVIDER, SITES = {"madrid", "ana lópez"}, {"valencia"}


def note(*spans: Span) -> Document:
    return Document("n", "Ana  López vive en Madrid, Valencia o Teruel.", spans)


GOLD = note(Span(0, 10, "NOMBRE", "Ana  López"), Span(19, 25, "TERRITORIO", "Madrid"),
            Span(27, 35, "TERRITORIO", "Valencia"), Span(38, 44, "TERRITORIO", "Teruel"))


def test_a_span_s_class_follows_its_case_folded_text():
    assert novelty_breakdown.novelty("ANA   López", PROVIDER, SITES) == novelty_breakdown.CLASSES[0]
    assert novelty_breakdown.novelty("Valencia", PROVIDER, SITES) == novelty_breakdown.CLASSES[1]
    assert novelty_breakdown.novelty("Teruel", PROVIDER, SITES) == novelty_breakdown.CLASSES[2]
    assert novelty_breakdown.seen_texts([GOLD]) == {"ana lópez", "madrid", "valencia", "teruel"}


def test_a_span_is_found_only_with_its_offsets_and_label():
    found = note(Span(0, 10, "NOMBRE", "Ana  López"), Span(19, 25, "CALLE", "Madrid"),  # wrong label
                 Span(27, 34, "TERRITORIO", "Valenci"), Span(38, 44, "TERRITORIO", "Teruel"))  # short
    counts = novelty_breakdown.recall_counts([GOLD], [found], "source_type", PROVIDER, SITES)
    assert counts == {novelty_breakdown.CLASSES[0]: {"gold": 2, "found": 1},
                      novelty_breakdown.CLASSES[1]: {"gold": 1, "found": 0},
                      novelty_breakdown.CLASSES[2]: {"gold": 1, "found": 1}}


def test_recall_sums_the_seeds_counts_and_compares_with_the_reference():
    provider, site, new = novelty_breakdown.CLASSES
    raw = [{provider: {"gold": 4, "found": 4}, site: {"gold": 2, "found": 1}, new: {"gold": 2, "found": 1}}] * 2
    pooled = [{provider: {"gold": 4, "found": 3}, site: {"gold": 2, "found": 0}, new: {"gold": 2, "found": 1}},
              {provider: {"gold": 4, "found": 4}, site: {"gold": 2, "found": 1}, new: {"gold": 2, "found": 2}}]
    numbers = novelty_breakdown.recall_table({"run:raw": raw, "run:pooled": pooled})
    run = {"command": "python experiments/novelty_breakdown.py --taggers run:raw run:pooled", "commit": "abc1234",
           "date": "2020-01-02", "corpus": "meddocan", "test_notes": "notes/test"}
    text = novelty_breakdown.report({"seeds": [0, 1], **numbers, "record": run})
    assert numbers["gold"] == {provider: 8, site: 4, new: 4, "all": 16}
    assert numbers["recall"][provider] == {"run:raw": 1.0, "run:pooled": 7 / 8}
    assert numbers["recall"]["all"] == {"run:raw": 12 / 16, "run:pooled": 11 / 16}
    assert f"| {site} | 4 | 0.500 | 0.250 (-25.0) |" in text
    assert f"2020-01-02, commit abc1234; seeds [0, 1]; test notes `notes/test`. Command: `{run['command']}`." in text
    trained = novelty_breakdown.report({"seeds": [0, 1], **numbers, "record": {**run, "trained_at": ["0aa0000"]}})
    assert trained == text.replace("commit abc1234", "trained at 0aa0000; reported at abc1234")
