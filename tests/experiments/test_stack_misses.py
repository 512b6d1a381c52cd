"""experiments/stack_misses.py: a stack's misses split into PHI it found under a non-HIPAA type and
PHI it did not find, and its page (issue #61's recall target)."""

from deidpool.corpus.document import Document, Span
from stack_misses import FOUND_AS_OTHER, NOT_FOUND, missed_tokens, party_rows, table

TEXT = "Visto en Clinica Sur por Juan el 3 de mayo."


def span(source_type: str, words: str) -> Span:
    start = TEXT.index(words)
    return Span(start, start + len(words), source_type, words)


GOLD = [Document("a", TEXT, (span("INSTITUCION", "Clinica Sur"), span("NOMBRE_SUJETO_ASISTENCIA", "Juan"),
                             span("FECHAS", "3 de mayo")))]


def test_a_hipaa_token_under_a_non_hipaa_type_is_found_as_other_and_an_unmarked_one_not_found():
    # an institution (ORGANIZATION, HIPAA) read as a hospital (not HIPAA); the name unmarked; the date right
    found = [Document("a", TEXT, (span("HOSPITAL", "Clinica Sur"), span("FECHAS", "3 de mayo")))]
    assert missed_tokens(GOLD, found) == {("INSTITUCION", FOUND_AS_OTHER): 2,
                                          ("NOMBRE_SUJETO_ASISTENCIA", NOT_FOUND): 1}
    assert missed_tokens(GOLD, GOLD) == {}


def test_each_threshold_is_scored_on_both_measures_and_the_misses_taken_at_the_lowest():
    outputs = {0.5: [Document("a", TEXT, (span("FECHAS", "3 de mayo"),))],
               0.02: [Document("a", TEXT, (span("HOSPITAL", "Clinica Sur"), span("FECHAS", "3 de mayo")))]}
    rows = party_rows(GOLD, outputs.__getitem__, [0.02, 0.5])
    high, low = rows["points"]
    assert (high["threshold"], low["threshold"]) == (0.5, 0.02)
    assert high["token_official_hipaa"]["recall"] == low["token_official_hipaa"]["recall"] == 3 / 6
    assert (high["token_official_all"]["recall"], low["token_official_all"]["recall"]) == (3 / 6, 5 / 6)
    assert rows["missed"] == [["INSTITUCION", FOUND_AS_OTHER, 2], ["NOMBRE_SUJETO_ASISTENCIA", NOT_FOUND, 1]]
    result = {"date": "today", "command": "python experiments/stack_misses.py", "federation": "fed", "seeds": [0, 1],
              "parties": ["site_b"], "thresholds": [0.02, 0.5], "rows": {"0": {"site_b": rows}, "1": {"site_b": rows}},
              "record": {"commit": "abc", "trained_at": ["def"]}}
    page = table(result)
    assert "today, trained at def; reported at abc; command" in page
    assert "| site_b | 0.02 | 1.000 | 0.500 | 1.000 | 0.833 |" in page
    assert "| site_b | INSTITUCION | 4 | 0 |" in page and "| site_b | all | 4 | 2 |" in page
