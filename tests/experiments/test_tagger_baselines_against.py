"""experiments/tagger_baselines.py --against: each configuration's seeds against the same
configuration and seeds of another results name (e.g. another stopping monitor), paired on the
same test notes (nothing is trained)."""

import re

import tagger_baselines
from deidpool.corpus.document import Document, Span
from tests.experiments.test_result_tables import table_lines

TEXT = "Seen 8/23 by Dr Smith, call 204-943-1045."
DATE, DOCTOR, PHONE = (5, 9, "Date"), (16, 21, "HCPName"), (28, 40, "Phone")
GOLD = {f"n{i}": Document(f"n{i}", TEXT, tuple(Span(s, e, label, TEXT[s:e]) for s, e, label in (DATE, DOCTOR, PHONE)))
        for i in range(4)}


def row(seed: int, found: tuple, name: str = "GloVe + casing") -> dict:
    predicted = [Document(i, TEXT, tuple(Span(s, e, label, TEXT[s:e]) for s, e, label in found)) for i in GOLD]
    return {"corpus": "physionet", "name": name, "seed": seed,
            "predicted": tagger_baselines.stored_predictions(predicted)}


def test_a_configuration_that_finds_more_is_ahead_on_every_seed_and_unpaired_rows_are_left_out():
    ours = [row(0, (DATE, DOCTOR, PHONE)), row(1, (DATE, DOCTOR)), row(0, (DATE,), name="GloVe")]
    theirs = [row(0, (DATE,)), row(1, (DATE,)), row(2, ())]
    lines = table_lines("\n".join(tagger_baselines.against_lines(ours, theirs, "other", {"physionet": GOLD})))[2:]
    assert len(lines) == 4  # one configuration, alone and with the layer, two measures; "GloVe" has no partner
    for line in lines:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert cells[1] == "GloVe + casing" and cells[4] == "2"
        if cells[2] == "alone":  # (the layer finds the doctor after "Dr" for both sides)
            difference, interval = cells[5].split(" ", 1)  # points: "+16.7 [+8.3, +25.0]"
            assert float(difference) > 0 and interval.startswith("[+")
            gains = dict(re.findall(r"(\d+): ([+-]\d+\.\d)", cells[6]))  # "0: +16.7 1: +8.3"
            assert set(gains) == {"0", "1"} and all(gain.startswith("+") for gain in gains.values())
    assert sum(line.count("| alone |") for line in lines) == 2


def test_nothing_in_common_gives_no_section():
    assert tagger_baselines.against_lines([row(0, ())], [row(1, ())], "other", {"physionet": GOLD}) == []
