"""Tests of the "surrogates" scheme (pseudonymization.surrogates): draws that depend on a token's type,
language and shape only, coherent spans, no token kept but listed function words, and its
re-identification bound."""

import random
from collections import Counter

import numpy as np
import pytest
from gensim.models import KeyedVectors

from deidpool.corpus import Document, Span
from deidpool.corpus.gazetteers import place_names
from deidpool.corpus.prepare import LabeledSentence, prepare_document
from deidpool.corpus.tokenize import Token, tokenize
from deidpool.pseudonymization.bound import reidentification_bound, token_success
from deidpool.pseudonymization.pseudonymize import Pseudonymizer, is_age
from deidpool.pseudonymization.surrogates import (
    _RELATIVES,
    PLACE_WORDS,
    YEARS,
    generator_kind,
    kept_words,
    number_shape,
    phi_spans,
    pool,
    span_surrogates,
    token_shape,
    word_distribution,
)
from deidpool.representer.embeddings import Embeddings

SPANISH_DATES = {"enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre",
                 "noviembre", "diciembre", "lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo"}
WORDS = ["paris", "lyon", "garcía", "the", "de", "and"]


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DEIDPOOL_CACHE", str(tmp_path))


@pytest.fixture(scope="module")
def embeddings() -> Embeddings:
    kv = KeyedVectors(2)
    kv.add_vectors(WORDS, np.random.default_rng(0).normal(size=(len(WORDS), 2)).astype(np.float32))
    return Embeddings(kv, "toy")


@pytest.fixture(scope="module")
def spanish(embeddings) -> Pseudonymizer:
    return Pseudonymizer(embeddings, 100, "surrogates", language="es")


@pytest.fixture(scope="module")
def english(embeddings) -> Pseudonymizer:
    return Pseudonymizer(embeddings, 1, "surrogates")  # N does not apply


def test_one_category_and_shape_draw_the_same_whatever_the_original(spanish):
    for seed in range(50):
        drawn = [spanish.pseudonym(word, random.Random(seed), "NOMBRE_SUJETO_ASISTENCIA")
                 for word in ("García", "Pérez")]
        if not {"garcía", "pérez"} & {word.lower() for word in drawn}:  # else one of them was drawn again
            assert drawn[0] == drawn[1]
    assert spanish.pseudonym("García", random.Random(7), "PAIS") != spanish.pseudonym("García", random.Random(7),
                                                                                       "NOMBRE_SUJETO_ASISTENCIA")


def test_a_span_gets_one_value_in_order_and_keeps_its_tokens_and_tags(spanish):
    sentence = LabeledSentence([Token(w, 0, 0) for w in ("Dña", ".", "Ana", "García", "López", ",", "de", "12")],
                               np.zeros(8, dtype=np.int8),
                               ["O", "O", "B-NOMBRE_SUJETO_ASISTENCIA", "I-NOMBRE_SUJETO_ASISTENCIA",
                                "I-NOMBRE_SUJETO_ASISTENCIA", "O", "O", "B-EDAD_SUJETO_ASISTENCIA"])
    names = {tuple(word.casefold() for word in value[:3]) for value in pool("es", "PATIENT")}
    for seed in range(20):
        [replaced] = spanish.labeled_sentences([sentence], random.Random(seed))
        words = [token.text for token in replaced.tokens]
        assert len(words) == 8 and replaced.tags == sentence.tags
        assert words[:2] == ["Dña", "."] and words[5:7] == [",", "de"]
        assert tuple(word.casefold() for word in words[2:5]) in names  # one name: first name(s) and surnames
        assert words[7] in number_shape("12", "EDAD_SUJETO_ASISTENCIA") and words[7] != "12"  # an age: 10..89


def date(day: str, month: str, year: str) -> tuple[list[str], list[str]]:
    """The tokens and tags of a Spanish date "<day> de <month> de <year>"."""
    return [day, "de", month, "de", year], ["B-FECHAS"] + ["I-FECHAS"] * 4


def test_function_words_inside_a_span_are_kept_and_the_other_words_drawn(spanish, english):
    words, tags = date("3", "marzo", "2018")
    for seed in range(30):
        drawn = spanish.replaced(words, tags, random.Random(seed))
        assert drawn[1] == drawn[3] == "de" and drawn[2] in SPANISH_DATES - {"marzo"}
        assert drawn[0] in number_shape("3") and drawn[4] in number_shape("2018", "FECHAS") and drawn[4] != "2018"
    street = spanish.replaced(["Calle", "de", "la", "Princesa"], ["B-CALLE"] + ["I-CALLE"] * 3, random.Random(0))
    assert street[1:3] == ["de", "la"] and street[3].lower() != "princesa"
    # only in lower case, between two tokens with a letter or a digit, and in the span's language
    for words, replaced in ((["De", "la", "Cruz"], 0), (["Ana", "Y", "Pérez"], 1), (["de", "Madrid"], 0),
                            (["Madrid", "de"], 1), (["M", ".", "la", "Teresa"], 2)):
        tags = ["B-NOMBRE_SUJETO_ASISTENCIA"] + ["I-NOMBRE_SUJETO_ASISTENCIA"] * (len(words) - 1)
        assert spanish.replaced(words, tags, random.Random(1))[replaced].lower() != words[replaced].lower()
    assert spanish.replaced(["De", "la", "Cruz"], ["B-CALLE", "I-CALLE", "I-CALLE"], random.Random(1))[1] == "la"
    assert english.replaced(["Ana", "de", "Smith"], ["B-PATIENT", "I-PATIENT", "I-PATIENT"],
                            random.Random(0))[1] != "de"


def test_originals_of_one_shape_and_kept_words_draw_alike(spanish):
    first, second = date("14", "marzo", "2018"), date("20", "julio", "2011")
    shapes = [[token_shape(words, i, "FECHAS", "es") for i in range(5)] for words, _ in (first, second)]
    assert shapes[0] == shapes[1] and shapes[0][1] == ("kept", "de", 1, 5)
    alike = 0
    for seed in range(50):
        drawn = [spanish.replaced(words, tags, random.Random(seed)) for words, tags in (first, second)]
        if not {w.lower() for w in drawn[0] + drawn[1]} & {"14", "20", "marzo", "julio", "2018", "2011"}:
            assert drawn[0] == drawn[1]  # else one of them was drawn again
            alike += 1
    assert alike > 25


def test_the_bound_counts_kept_words_as_not_hidden_apart_from_the_others(spanish):
    tokens = spanish.phi_tokens(*date("3", "marzo", "2018"))
    report = reidentification_bound(tokens, spanish, language="es")
    assert (report["overall"]["hidden"], report["overall"]["not_hidden"]) == (3, 2)
    others = [token for token in tokens if token[2][0] != "kept"]
    assert token_success(tokens, spanish, language="es") == {
        **token_success(others, spanish, language="es"), ("de", "FECHAS", ("kept", "de", 1, 5)): None,
        ("de", "FECHAS", ("kept", "de", 3, 5)): None}


def test_spans_of_bio_and_bioes_tags():
    assert phi_spans(["O", "B-A", "I-A", "B-A", "I-B", "O", "I-A", "E-A", "S-A", "I-A"]) == [
        range(1, 3), range(3, 4), range(4, 5), range(6, 8), range(8, 9), range(9, 10)]


def test_words_of_the_language_and_casing_of_the_original(spanish, english):
    months = {spanish.pseudonym("marzo", random.Random(seed), "FECHAS") for seed in range(100)}
    assert months <= SPANISH_DATES - {"marzo"} and len(months) > 5
    assert all(word.isupper() for word in (spanish.pseudonym("MADRID", random.Random(s), "TERRITORIO")
                                           for s in range(20)))
    english_months = {english.pseudonym("March", random.Random(seed), "DATE") for seed in range(100)}
    assert english_months and all(word[0].isupper() and word.isascii() for word in english_months)
    assert not english_months & {word.capitalize() for word in SPANISH_DATES}


def test_no_token_is_kept_and_numbers_and_other_tokens_keep_their_shape(english, spanish):
    for seed in range(200):
        rng = random.Random(seed)
        assert spanish.pseudonym("Varón", rng, "SEXO_SUJETO_ASISTENCIA").lower() != "varón"
        year = english.pseudonym("2010", rng, "DATE")
        assert year != "2010" and year in number_shape("2010", "DATE")
        padded = english.pseudonym("07", rng, "DATE")
        assert padded != "07" and len(padded) == 2 and padded.startswith("0")
        initial = english.pseudonym("J", rng, "PTNameInitial")
        assert initial != "J" and initial.isupper() and len(initial) == 1
        code = english.pseudonym("AB12-x", rng, "IDNUM")
        assert code != "AB12-x" and code[:2].isupper() and code[2:4].isdigit() and code[4] == "-"


def test_draws_depend_on_the_rng_alone(spanish):
    document = Document("d", "Paciente Ana García, calle Mayor 3, Madrid.",
                        (Span(9, 19, "NOMBRE_SUJETO_ASISTENCIA", "Ana García"), Span(21, 34, "CALLE", "calle Mayor 3"),
                         Span(36, 42, "TERRITORIO", "Madrid")))
    first, second = (spanish.document(document, random.Random(4)) for _ in range(2))
    assert first == second and first.text != document.text
    assert [span.source_type for span in first.spans] == [span.source_type for span in document.spans]
    assert "García" not in first.text and "Madrid" not in first.text


def test_the_empirical_bound_is_the_share_of_the_most_frequent_original(spanish):
    shape = ("word", 0, "Ab", 1, 0, 1)
    tokens = [("Zqxa", "TERRITORIO", shape)] * 3 + [("Zqxb", "TERRITORIO", shape)]  # no city of the pool
    report = reidentification_bound(tokens, spanish, language="es")
    assert report["scheme"] == "surrogates" and report["overall"]["hidden"] == 4
    assert report["overall"]["mean_success"]["empirical"] == pytest.approx(3 / 4)
    # the redraw: the second original wins when the first is drawn (the surrogate is never its own original)
    city = pool("es", "CITY")[0][0]
    found = token_success([(city, "TERRITORIO", shape)] * 2 + [("Zqxa", "TERRITORIO", shape)], spanish, language="es")
    assert found[city, "TERRITORIO", shape]["empirical"] == 1.0
    mass = word_distribution("es", "CITY", 0, 1)[city.casefold()]
    assert found["Zqxa", "TERRITORIO", shape]["empirical"] == pytest.approx(mass)


def test_the_bound_of_numbers_and_patterns_under_the_uniform_prior(english):
    tokens = [("14", "DATE", token_shape(["14"], 0, "DATE", "en")),
              ("J", "PATIENT", token_shape(["J"], 0, "PATIENT", "en")), (".", "PATIENT", None)]
    found = token_success(tokens, english)
    assert found[tokens[0]]["uniform"] == pytest.approx(1 / (len(number_shape("14", "DATE")) - 1))
    assert found[tokens[1]]["uniform"] == pytest.approx(1 / 25)
    assert found[tokens[2]] is None
    report = reidentification_bound(tokens, english)
    assert report["overall"]["not_hidden"] == 1 and report["overall"]["hidden"] == 2


def test_the_bound_tokens_carry_the_shape(spanish):
    [sentence] = prepare_document(Document("d", "Vive en C/ Mayor 12", (Span(8, 19, "CALLE", "C/ Mayor 12"),)))
    tokens = spanish.phi_tokens([t.text for t in sentence.tokens], sentence.tags)
    assert [token[:2] for token in tokens] == [("C", "CALLE"), ("/", "CALLE"), ("Mayor", "CALLE"), ("12", "CALLE")]
    assert tokens[0][2] == ("chars", "A", 0, 4) and tokens[1][2] is None and tokens[2][2] == ("word", 0, "Ab", 1, 2, 4)


def test_a_span_is_filled_by_one_value_of_its_word_count(spanish):
    cities = {value[0] for value in pool("es", "CITY") if len(value) == 1}
    patients = {tuple(word.casefold() for word in value) for value in pool("es", "PATIENT") if len(value) == 2}
    for seed in range(30):
        assert spanish.replaced(["Madrid"], ["B-TERRITORIO"], random.Random(seed))[0] in cities - {"Madrid"}
        drawn = spanish.replaced(["Iglesias", "Tellez"], ["B-NOMBRE_SUJETO_ASISTENCIA", "I-NOMBRE_SUJETO_ASISTENCIA"],
                                 random.Random(seed))
        assert tuple(word.casefold() for word in drawn) in patients


def test_draws_follow_the_distribution_the_bound_reads(spanish):
    words, tags = ["Iglesias", "Tellez"], ["B-NOMBRE_SUJETO_ASISTENCIA", "I-NOMBRE_SUJETO_ASISTENCIA"]
    rng, draws = random.Random(0), 4000
    seen = Counter(spanish.replaced(words, tags, rng)[1].casefold() for _ in range(draws))
    expected = word_distribution("es", "PATIENT", 1, 2)
    assert sum(expected.values()) == pytest.approx(1.0)
    for word, count in seen.most_common(3):  # each within four standard deviations of its share
        share = expected[word] / (1 - expected.get("tellez", 0.0))
        assert abs(count / draws - share) < 4 * (share * (1 - share) / draws) ** 0.5


def test_the_words_that_name_a_kind_of_place_are_drawn_too_whatever_they_were(spanish):
    """A hospital span becomes some hospital-shaped name: "Hospital" and "Universitario" are drawn
    from the pool like the name, but not drawn again when equal (`PLACE_WORDS`): the draw at their
    position is the same whatever they were, so a surrogate hospital starts with "Hospital" as often
    as the pool's do."""
    words = ["Hospital", "Universitario", "Reina", "Sofía"]
    tags = ["B-HOSPITAL"] + ["I-HOSPITAL"] * 3
    drawn = [spanish.replaced(words, tags, random.Random(seed)) for seed in range(60)]
    assert all(new[2] != "Reina" and new[3] != "Sofía" for new in drawn)
    first = Counter(new[0] for new in drawn)
    assert first["Hospital"] and len(first) > 1, first
    other = [spanish.replaced(["Clínica", "Universitaria", "Reina", "Sofía"], tags, random.Random(seed))
             for seed in range(60)]
    assert [new[0] for new in other] == [new[0] for new in drawn]  # the same draw whatever the original's kind
    shapes = [token[2] for token in spanish.phi_tokens(words, tags)]
    assert shapes[0] == ("word", 0, "Ab", 4, 0, 4) and shapes[2] == ("word", 2, "Ab", 4, 2, 4)
    assert kept_words("es") == {"de", "del", "la", "las", "el", "los", "y", "al", "en"}


def test_unsupported_language_is_refused(embeddings):
    with pytest.raises(ValueError, match="no surrogates for language 'fr'"):
        Pseudonymizer(embeddings, 100, "surrogates", language="fr")
    with pytest.raises(ValueError, match="draws no candidates"):
        Pseudonymizer(embeddings, 100, "surrogates").candidates("paris")


def test_audit_pairs_draw_surrogates_and_fakes_keep_their_shape(embeddings):
    from deidpool.adversary.pairs import PairSource

    pseudonymizer = Pseudonymizer(embeddings, 100, "surrogates")
    sentences = [LabeledSentence([Token(w, 0, 0) for w in ("the", word, "and")], np.zeros(3, dtype=np.int8),
                                 ["O", "B-CITY", "O"]) for word in ("paris", "lyon", "Paris")]
    source = PairSource(sentences, pseudonymizer, export_path=True)
    assert source.fake_symmetry(seed=1, draws=3) == {"fakes": 9, "same_candidates": 9}
    pairs = source.draw(seed=0)
    assert pairs.shared_original.shape == pairs.original.shape
    assert not np.array_equal(pairs.shared_original, pairs.original)  # the shared copies are pseudonymized


def test_a_surrogate_also_avoids_the_word_it_is_told_to():
    rng = random.Random(0)
    for word, label, other in (("a1", "IDNUM", "b4"), ("12", "DATE", "10")):  # a letter-digit id; a day
        plain = [span_surrogates([word], label, "en", rng)[0] for _ in range(2000)]
        avoiding = [span_surrogates([word], label, "en", rng, also_not=[other])[0] for _ in range(2000)]
        assert word not in plain and other in plain
        assert word not in avoiding and other not in avoiding


def test_a_fake_pairs_two_exports_avoid_both_candidates(embeddings):
    """At a fake's replaced position neither export carries the original's or the fake's word, so an
    export equal to one candidate cannot point to the other (docs/privacy.md)."""
    from deidpool.adversary.pairs import PairSource

    pseudonymizer = Pseudonymizer(embeddings, 100, "surrogates")
    sentences = [LabeledSentence([Token(w, 0, 0) for w in ("the", word, "and")], np.zeros(3, dtype=np.int8),
                                 ["O", "B-CITY", "O"]) for word in ("paris", "lyon", "Paris", "berlin")]
    source = PairSource(sentences, pseudonymizer, export_path=True)
    for epoch in range(20):
        pairs = source.draw(seed=0, epoch=epoch)
        for index in np.flatnonzero(pairs.labels == 0):
            row = source.offsets[index] + pairs.replaced[index]
            for shared in (pairs.shared_original[row], pairs.shared_partner[row]):
                for candidate in (pairs.original[row], pairs.partner[row]):
                    assert not np.array_equal(shared, candidate) or not candidate.any()


def test_spanish_relatives_hospitals_and_organisations_draw_what_notes_write(spanish):
    """MEDDOCAN names relatives by role, hospitals and streets after saints, organisations as
    institutes and faculties: the surrogates draw every word of them but the function words."""
    rng = random.Random(0)
    for _ in range(20):
        [relative] = span_surrogates(["madre"], "FAMILIARES_SUJETO_ASISTENCIA", "es", rng)
        assert relative != "madre" and relative in _RELATIVES["es"]
    for words, label, kept in ((["Hospital", "San", "Carlos"], "HOSPITAL", set()),
                               (["Facultad", "de", "Medicina", "de", "Sevilla"], "INSTITUCION", {1, 3}),
                               (["Avda", ".", "Dr", ".", "Esquerdo"], "CALLE", {1, 3})):
        for _ in range(10):
            drawn = span_surrogates(words, label, "es", rng)
            same = {i for i, (new, old) in enumerate(zip(drawn, words)) if new.casefold() == old.casefold()}
            assert kept <= same and not {i for i in same - kept if words[i].casefold() not in PLACE_WORDS["es"][
                generator_kind(label)]}, drawn  # only a place word may come out equal, by chance
    assert generator_kind("FAMILIARES_SUJETO_ASISTENCIA") == "RELATIVE"


def test_english_cities_are_real_and_a_lumped_location_draws_hospitals_initials_and_cities():
    """Faker's en_US cities are made up ("Williamshaven"); English city surrogates come from
    GeoNames. PhysioNet's `Location` (LOCATION-OTHER) is mostly hospitals, by name or initials."""
    city_words = {token.text for name in place_names("en") for token in tokenize(name)}
    cities = pool("en", "CITY")
    assert len(cities) > 1000 and all(word in city_words for value in cities for word in value)
    places = pool("en", "LOCATION-OTHER")
    initials = [value for value in places if len(value) == 1 and value[0].isupper() and 2 <= len(value[0]) <= 5]
    hospitals = [value for value in places if value[-1] in ("Hospital", "Clinic", "Center")]
    in_cities = [value for value in places if value in set(cities)]
    assert min(len(initials), len(hospitals), len(in_cities)) > len(places) / 10
    rng = random.Random(0)
    drawn = [span_surrogates(["GH"], "LOCATION-OTHER", "en", rng)[0] for _ in range(50)]
    assert "GH" not in drawn and any(word.isupper() for word in drawn)


# Numbers are drawn by shape (issue #62, item 4): digit count and leading zero, not value blocks.

AGE_LABELS = ("AGE", "Age", "EDAD_SUJETO_ASISTENCIA")  # i2b2 2014 and 2006, PhysioNet, MEDDOCAN


def number_draws(words: list[str], label: str, position: int, draws: int = 2000) -> list[str]:
    """The surrogates of `words[position]`, a number in a span of `words` of tag label `label`, in
    `draws` draws from one fixed test RNG."""
    rng = random.Random(62)
    return [span_surrogates(words, label, "en", rng)[position] for _ in range(draws)]


def total_variation(first: list[str], second: list[str], avoided: set[str]) -> float:
    """The total variation distance of two samples' distributions, leaving out `avoided` (each
    original is drawn again, so each sample lacks its own: that is the redraw, not a block). Up to
    two digits by value, wider by the leading decile of the digit count's values."""
    def key(word: str) -> tuple[int, int]:
        return len(word), int(word) if len(word) <= 2 else int(word) * 10 // 10 ** len(word)

    counts = [Counter(key(w) for w in sample if w not in avoided) for sample in (first, second)]
    totals = [sum(count.values()) for count in counts]
    return sum(abs(counts[0][k] / totals[0] - counts[1][k] / totals[1]) for k in counts[0] | counts[1]) / 2


@pytest.mark.parametrize("first, second, label, position", [
    (["11"], ["57"], "DATE", 0),  # blocks 10..12 and 32..59 before
    (["03"], ["09"], "FECHAS", 0),
    (["555", "-", "1234"], ["555", "-", "9876"], "PHONE", 2),  # blocks 1000..1899 and 2100..9999 before
    (["1955"], ["4321"], "NUMERO_TELEFONO", 0),  # a phone number is no year: block 1940..1959 before
    (["2018"], ["1925"], "DATE", 0),  # the years 1900..2099 alike: twenty-year blocks before
    (["45"], ["12"], "EDAD_SUJETO_ASISTENCIA", 0),  # an age's side of 89
    (["91"], ["99"], "AGE", 0),
])
def test_numbers_of_one_shape_draw_alike_whatever_their_value(first, second, label, position):
    assert token_shape(first, position, label, "en") == token_shape(second, position, label, "en")
    drawn = [number_draws(words, label, position) for words in (first, second)]
    assert total_variation(*drawn, {first[position], second[position]}) < 0.1
    wider = "1" + first[position]  # one digit more: another shape, drawn apart
    assert total_variation(drawn[0], number_draws([wider], label, 0), {first[position], wider}) == pytest.approx(1)


@pytest.mark.parametrize("word, label", [("7", None), ("0", "DATE"), ("03", "FECHAS"), ("11", "DATE"),
                                         ("02115", "ZIP"), ("4815", "FAX"), ("0123", "DATE"), ("95", "Age")])
def test_numbers_keep_their_shape_and_separators_and_are_never_their_original(word, label):
    words = [word, "-", "88"]
    rng = random.Random(0)
    for _ in range(300):
        new, separator, other = span_surrogates(words, label, "en", rng)
        assert separator == "-" and new != word and other != "88"
        assert new.isascii() and new.isdigit() and len(new) == len(word) and len(other) == 2
        assert len(word) == 1 or new.startswith("0") == word.startswith("0")


def test_ages_over_89_stay_over_89_in_every_corpus():
    for label in AGE_LABELS:
        assert is_age(label)
        for word, low, high in (("95", 90, 99), ("105", 100, 119), ("89", 10, 89), ("7", 0, 9)):
            values = {int(drawn) for drawn in number_draws([word], label, 0, 300)}
            assert low <= min(values) and max(values) <= high and len(values) > (high - low) / 2, (label, word)
    assert number_shape("95", "PHONE") == number_shape("12", "PHONE")  # not an age: by shape alone


def test_a_date_year_draws_from_two_centuries_and_other_four_digit_numbers_by_shape():
    assert number_shape("2018", "FECHAS").values == number_shape("1925", "DateYear").values == YEARS
    years = {int(drawn) for drawn in number_draws(["2018"], "DATE", 0)}
    assert years <= set(YEARS) and len(years) > 150  # no twenty-year block around 2018
    assert number_shape("1850", "DATE").values == range(1000, 1900)  # no year of the notes: its own side
    assert number_shape("2018", "PHONE").values == number_shape("2018").values == range(1000, 10000)


@pytest.mark.parametrize("label", [None, "PHONE", "DATE", *AGE_LABELS])
def test_number_shapes_partition_every_width_into_sets_of_ten_or_more(label):
    """Each number is in its own set, every number of a set has that set (what the bound's class
    assumes), and a set never holds one number only (the redraw would find no other)."""
    for width in (1, 2, 3, 4):
        members = Counter()
        for value in range(10 ** width):
            found = number_shape(word := str(value).zfill(width), label)
            assert word in found and len(found) >= 10 and found.width == width
            members[found] += 1
        assert all(count == len(found) for found, count in members.items()), (label, width)


@pytest.mark.parametrize("word, label, size", [("11", "DATE", 90), ("57", "DATE", 90), ("03", "FECHAS", 10),
                                               ("95", "EDAD_SUJETO_ASISTENCIA", 10), ("2018", "DATE", 200),
                                               ("1234", "PHONE", 9000), ("02115", "ZIP", 10000)])
def test_the_bound_of_a_number_counts_its_shape_set_minus_its_surrogate(english, word, label, size):
    token = (word, label, token_shape([word], 0, label, "en"))
    assert len(number_shape(word, label)) == size
    assert token_success([token], english)[token]["uniform"] == pytest.approx(1 / (size - 1))
