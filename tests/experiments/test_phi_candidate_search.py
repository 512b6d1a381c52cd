"""experiments/phi_candidate_search.py on tiny data: the attack names the original PHI token when the
export carries it (no pseudonymization) and does not beat chance under surrogates, whose draws do
not depend on the original; the results page reads the target on the replaced tokens, against chance
and against the chance within the shape each surrogate shows."""

import copy

import keras
import pytest

from deidpool.adversary.runs import sentences
from deidpool.corpus import Document, Span
from deidpool.pseudonymization.pseudonymize import Pseudonymizer
from deidpool.representer.noise import set_deterministic
from deidpool.representer.representation import build_representer
from nonphi_readback import ExportedNotes
from phi_candidate_search import (
    decoys,
    phi_candidate_search,
    phi_targets,
    shown_shape,
    table,
    target_spans,
    within_shape_lines,
)
from tests.experiments.test_nonphi_readback import DIM, NAMES, documents, tiny_embeddings

K = 4  # the tiny vocabulary's four names: every candidate set is all of them


@pytest.fixture(scope="module")
def embeddings():
    return tiny_embeddings()


@pytest.fixture(scope="module")
def representer():
    keras.utils.set_random_seed(0)
    model = build_representer(DIM, repr_size=6, lstm_units=8)
    set_deterministic(model)
    return model


def exported(embeddings, scheme: str, neighbours: int = 2) -> ExportedNotes:
    return ExportedNotes(sentences(documents(60, 7)), Pseudonymizer(embeddings, neighbours, scheme, "es"))


def test_only_gold_phi_tokens_with_a_vector_are_attacked(embeddings):
    test = exported(embeddings, "surrogates")
    targets = phi_targets(test, 1000, 0)
    assert len(targets) == 60  # one name per sentence
    assert all(test.tags[test.offsets[s] + i] == "B-PATIENT" for s, i in targets)


def test_a_decoy_is_another_word_of_the_targets_label(embeddings):
    test = exported(embeddings, "surrogates")
    targets = phi_targets(test, 1000, 0)
    chosen = decoys(test, targets, 0)
    originals = [test.words[test.offsets[s] + i] for s, i in targets]
    assert all(decoy != original and decoy.lower() in NAMES for decoy, original in zip(chosen, originals))


def decoys_with_capitals(embeddings, in_capitals: set[int]) -> dict[str, str | None]:
    """Each target word's decoy when the names of the documents `in_capitals` are written in capitals."""
    def written(index: int, document: Document) -> Document:
        span = document.spans[0]
        name = span.text.upper() if index in in_capitals else span.text
        return Document(document.id, document.text[:span.start] + name + document.text[span.end:],
                        (Span(span.start, span.end, "PATIENT", name),))

    test = ExportedNotes(sentences([written(i, d) for i, d in enumerate(documents(60, 7))]),
                         Pseudonymizer(embeddings, 2, "surrogates", "es"))
    targets = phi_targets(test, 1000, 0)
    return dict(zip([test.words[test.offsets[s] + i] for s, i in targets], decoys(test, targets, 0)))


def test_a_decoy_shows_the_shape_the_targets_surrogate_shows(embeddings):
    """A name in capitals draws its decoy among other names in capitals, and one alone in its shape gets none."""
    chosen = decoys_with_capitals(embeddings, {0, 2})  # "Smith" and "Lopez"
    assert chosen["SMITH"] == "LOPEZ" and chosen["LOPEZ"] == "SMITH"
    assert all(decoy[0].isupper() and not decoy.isupper() for word, decoy in chosen.items() if not word.isupper())
    assert decoys_with_capitals(embeddings, {0})["SMITH"] is None


def test_the_attack_names_an_original_the_export_carries(embeddings, representer):
    attack = phi_candidate_search(representer, exported(embeddings, "groups", neighbours=1), k=K, tokens=60)
    rows = {row["tokens"]: row for row in attack["rows"]}
    assert rows["PHI tokens"]["rate"] == 1.0 and rows["kept as written"]["count"] == 60
    assert rows["replaced, centred on a decoy"]["count"] == 0  # nothing was replaced
    assert rows["PHI tokens"]["chance"] == pytest.approx(1 / K)


def test_under_surrogates_the_attack_does_not_beat_chance(embeddings, representer):
    attack = phi_candidate_search(representer, exported(embeddings, "surrogates"), k=K, tokens=60)
    rows = {row["tokens"]: row for row in attack["rows"]}
    assert rows["replaced"]["count"] == 60 and rows["kept as written"]["count"] == 0
    assert rows["replaced"]["ci"][0] <= 1 / K  # the surrogates are not the tiny vocabulary's names
    assert rows["replaced, centred on a decoy"]["count"] == rows["replaced, those with a decoy"]["count"] == 60
    result = {"date": "today", "commit": "abc", "command": "python experiments/phi_candidate_search.py",
              "seconds": 1.0, "representer": "r.keras", "embeddings": "tiny", "language": "es", "test": "dev",
              "pseudonymization": "surrogates", "neighbours": 100, "seed": 0, "attack": attack}
    page = table(result)
    assert f"| replaced | 60 | **{rows['replaced']['rate']:.3f}** |" in page
    assert "Target (issue #37)" in page and "on the 60 replaced tokens with a decoy the original is named" in page
    labels = attack["labels"]
    assert labels and sum(row["count"] for row in labels) <= 60 and all(row["count"] >= 10 for row in labels)
    assert all(f"| {row['tokens']} | {row['count']} |" in page for row in labels)
    assert "Per label (replaced tokens, labels with at least 10 sampled" in page
    decoyed = attack["label_decoys"]
    assert decoyed and all(row["decoy"]["count"] == row["original"]["count"] >= 10 for row in decoyed)
    assert sum(row["decoy"]["count"] for row in decoyed) <= 60
    assert "Per label against its decoys" in page
    assert all(f"| {row['label']} | {row['original']['count']} |" in page for row in decoyed)


def test_the_export_says_more_than_the_shape_only_where_the_original_beats_its_decoys_interval():
    from phi_candidate_search import beyond_the_shape

    assert beyond_the_shape({"ci": [0.30, 0.50], "chance": 0.01}, {"rate": 0.25})
    assert not beyond_the_shape({"ci": [0.30, 0.50], "chance": 0.01}, {"rate": 0.35})
    assert not beyond_the_shape({"ci": [0.003, 0.02], "chance": 0.01}, {"rate": 0.0})  # above the decoy, not chance


def test_a_candidate_shares_the_shape_a_surrogate_shows_of_the_original():
    """A number's digit count, leading zero and range; a word's casing and place in its span; a kept
    word only itself; the first candidate (the original) always."""
    assert list(shown_shape(["56", "12", "34", "123", "ab", "05"], ["56"], 0, "NUMERO_TELEFONO", "es")) == \
        [True, True, True, False, False, False]
    assert list(shown_shape(["56", "12", "95", "120"], ["56"], 0, "EDAD_SUJETO_ASISTENCIA", "es")) == \
        [True, True, False, False]  # an age keeps its side of 89
    street = ["Calle", "de", "Alcalá"]
    assert list(shown_shape(["Alcalá", "Goya", "GOYA", "goya", "7", "J"], street, 2, "CALLE", "es")) == \
        [True, True, False, False, False, False]
    assert list(shown_shape(["de", "del", "la"], street, 1, "CALLE", "es")) == [True, False, False]
    assert list(shown_shape(["J", "K", "j", "JK"], ["J", "Smith"], 0, "NOMBRE_SUJETO_ASISTENCIA", "es")) == \
        [True, True, False, False]


def test_a_targets_span_is_its_gold_phi_span(embeddings):
    test = exported(embeddings, "surrogates")
    targets = phi_targets(test, 5, 0)
    spans = target_spans(test, targets)
    assert [(words, position, label) for words, position, label in spans] == \
        [([test.words[test.offsets[s] + i]], 0, "PATIENT") for s, i in targets]


def lowercase_names(embeddings) -> ExportedNotes:
    """`exported`'s notes with every name written as the tiny vocabulary has it (lower case)."""
    def written(document: Document) -> Document:
        span = document.spans[0]
        name = span.text.lower()
        return Document(document.id, document.text[:span.start] + name + document.text[span.end:],
                        (Span(span.start, span.end, "PATIENT", name),))

    return ExportedNotes(sentences([written(d) for d in documents(60, 7)]),
                         Pseudonymizer(embeddings, 2, "surrogates", "es"))


def test_within_the_shape_the_attack_keeps_the_candidates_that_show_the_originals_shape(embeddings, representer):
    """A capitalized name is alone in its shape among the lower-case vocabulary; a lower-case one
    shares it with every candidate, where the within-shape numbers are the plain ones."""
    capitalized = phi_candidate_search(representer, exported(embeddings, "surrogates"), k=K, tokens=60)
    replaced = {row["tokens"]: row for row in capitalized["rows"]}["replaced"]
    assert replaced["within_shape"] == {"candidates": 1.0, "chance": 1.0, "hits": 60.0, "rate": 1.0,
                                        "ci": replaced["within_shape"]["ci"]}
    lower = phi_candidate_search(representer, lowercase_names(embeddings), k=K, tokens=60)
    for row in [*lower["rows"], *lower["labels"]]:
        if row["count"]:
            within = row["within_shape"]
            assert within["candidates"] == K and within["chance"] == pytest.approx(row["chance"])
            assert within["rate"] == pytest.approx(row["rate"]) and within["ci"] == pytest.approx(row["ci"])
    assert all(row[side]["within_shape"]["chance"] == pytest.approx(1 / K)
               for row in lower["label_decoys"] for side in ("original", "decoy"))


def result_of(attack: dict) -> dict:
    return {"date": "today", "commit": "abc", "command": "python experiments/phi_candidate_search.py",
            "seconds": 1.0, "representer": "r.keras", "embeddings": "tiny", "language": "es", "test": "dev",
            "pseudonymization": "surrogates", "neighbours": 100, "seed": 0, "attack": attack}


def test_the_page_reads_the_target_within_the_shape_and_a_record_without_it_renders_as_before(embeddings,
                                                                                              representer):
    attack = phi_candidate_search(representer, lowercase_names(embeddings), k=K, tokens=60)
    page = table(result_of(attack))
    assert "\n## Within the shape\n" in page
    assert "Target against the chance within the shape: the replaced tokens' rate at most 2 x" in page
    rows = {row["tokens"]: row for row in attack["rows"]}
    replaced = rows["replaced"]
    assert (f"| replaced | 60 | {replaced['rate']:.3f} | 0.250 | 4.0 | **0.250** | {replaced['rate']:.3f} | "
            f"[{replaced['ci'][0]:.3f}, {replaced['ci'][1]:.3f}] |") in page
    assert all(f"| {row['tokens']} | {row['count']} |" in page for row in attack["rows"])
    older = copy.deepcopy(attack)
    for row in [*older["rows"], *older["labels"], *(row[side] for row in older["label_decoys"]
                                                    for side in ("original", "decoy"))]:
        del row["within_shape"]
    assert table(result_of(older)) == page.split("\n\n## Within the shape\n")[0]



def test_the_page_names_the_commit_its_representer_was_trained_at(embeddings, representer):
    attack = phi_candidate_search(representer, lowercase_names(embeddings), k=K, tokens=60)
    trained_elsewhere = {**result_of(attack), "record": {"commit": "abc", "trained_at": ["0d9039e"]}}
    assert "today, trained at 0d9039e; reported at abc; command" in table(trained_elsewhere)
    assert "today, commit abc; command" in table(result_of(attack))

def label_row(label: str, rate: float, within: float, aware: float = 0.0) -> dict:
    return {"tokens": f"replaced {label}", "count": 20, "hits": 20 * rate, "rate": rate, "ci": [0.0, 1.0],
            "chance": 0.01, "within_shape": {"candidates": 1 / within, "chance": within, "hits": 20 * aware,
                                             "rate": aware, "ci": [0.0, 0.2]}}


def test_each_label_is_judged_against_chance_and_against_the_chance_within_its_shape():
    replaced = {**label_row("x", 0.015, 0.02, 0.03), "tokens": "replaced"}
    attack = {"k": 100, "rows": [replaced],
              "labels": [label_row("CALLE", 0.028, 0.012), label_row("NUMERO_TELEFONO", 0.38, 0.25, 0.6),
                         label_row("PAIS", 0.0, 0.5), label_row("FECHAS", 0.016, 0.02, 0.03)]}
    lines = within_shape_lines(attack)
    assert ("Per label (replaced tokens, labels with at least 10 sampled; judged on the rate): above 2 x chance "
            "**2 of 4** (CALLE, NUMERO_TELEFONO); above 2 x the chance within the shape **1 of 4** (CALLE). "
            "Above 2 x chance only: NUMERO_TELEFONO. The shape-aware attacker above 2 x the chance within the "
            "shape: **1 of 4** (NUMERO_TELEFONO).") in lines
    assert "| NUMERO_TELEFONO | 20 | 0.380 | 0.010 | yes | 0.250 | no | 0.600 | [0.000, 0.200] | yes |" in lines
    assert "| CALLE | 20 | 0.028 | 0.010 | yes | 0.012 | yes | 0.000 | [0.000, 0.200] | no |" in lines
    assert any("read on the interval's upper end: **not shown** (0.8 x the chance within the shape, 1.5 x chance); "
               "the shape-aware attacker's: **not shown** (1.5 x the chance within the shape)." in line
               for line in lines)
    attack["rows"] = [{**replaced, "ci": [0.0, 0.04], "within_shape": {**replaced["within_shape"], "ci": [0.0, 0.04]}}]
    assert any("upper end: **met** (0.8 x the chance within the shape, 1.5 x chance); the shape-aware attacker's: "
               "**met**" in line for line in within_shape_lines(attack))
