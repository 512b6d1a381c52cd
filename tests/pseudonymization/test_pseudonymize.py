import random

import numpy as np
import pytest
from gensim.models import KeyedVectors

from deidpool.corpus import Document, Span
from deidpool.corpus.casing import casing_ids
from deidpool.corpus.prepare import LabeledSentence, prepare_document
from deidpool.corpus.tokenize import Token
from deidpool.pseudonymization.pseudonymize import (
    NumberCandidates,
    Pseudonymizer,
    number_block,
    number_candidates,
    tag_category,
)
from deidpool.representer.embeddings import Embeddings

WORDS = {"smith": [1, 0, 0], "jones": [0.9, 0.1, 0], "brown": [0.8, 0.2, 0], "boston": [0, 1, 0],
         "denver": [0, 0.9, 0.1], "the": [0, 0, 1], "seen": [0.3, 0.3, 0.3], "12": [0.5, 0, 0.5], "7": [0.4, 0, 0.6],
         "34": [0.45, 0, 0.55]}


@pytest.fixture(scope="module")
def embeddings():
    kv = KeyedVectors(3)
    kv.add_vectors(list(WORDS), np.array(list(WORDS.values()), dtype=np.float32))
    return Embeddings(kv, "toy")


DOC = Document("d", "Seen Smith in BOSTON on 12 at the zqx.",
               (Span(5, 10, "PATIENT", "Smith"), Span(14, 20, "CITY", "BOSTON"), Span(24, 26, "DATE", "12"),
                Span(34, 37, "OTHER", "zqx")))


def test_one_neighbour_changes_nothing(embeddings):
    assert Pseudonymizer(embeddings, 1).document(DOC, random.Random(0)) == DOC


def test_phi_tokens_become_neighbours_with_their_casing_and_spans_follow(embeddings):
    seen, numbers = set(), set()
    for seed in range(30):
        doc = Pseudonymizer(embeddings, 3).document(DOC, random.Random(seed))
        name, city, number, other = (s.text for s in doc.spans)
        assert name in {"Smith", "Jones", "Brown"} and city in {"BOSTON", "DENVER", "SEEN"}
        # out of vocabulary: a neighbour of the stand-in, here the most frequent word ("other" is unknown)
        assert other in {"smith", "jones", "brown"}
        assert doc.text.startswith("Seen ") and doc.text.endswith(f" at the {other}.")
        seen.add(name)
        numbers.add(number)
    assert seen == {"Smith", "Jones", "Brown"}
    assert numbers == {"10", "11", "12"}  # two digits, 1..12 (a month or a day), not only vocabulary words


def test_only_given_positions_are_replaced(embeddings):
    sentence = prepare_document(DOC)[0]
    words = Pseudonymizer(embeddings, 9).sentence(sentence, random.Random(1), only=[1])
    assert words[0] == "Seen" and words[3:] == [t.text for t in sentence.tokens[3:]]


def test_every_token_with_a_letter_or_digit_is_replaced_and_punctuation_never(embeddings):
    pseudonymizer = Pseudonymizer(embeddings, 9)
    assert all(map(pseudonymizer.replaceable, ["the", "Smith", "zqx", "12", "º"]))
    assert not pseudonymizer.replaceable(".") and not pseudonymizer.replaceable("--")


def test_neighbours_must_be_positive(embeddings):
    with pytest.raises(ValueError, match="neighbours"):
        Pseudonymizer(embeddings, 0)


def test_pseudonymize_command_writes_a_valid_corpus_in_another_format(tmp_path):
    from typer.testing import CliRunner

    from deidpool.cli import app
    from deidpool.corpus.formats import read_corpus, write_corpus

    write_corpus([DOC], tmp_path / "in", "i2b2")
    result = CliRunner().invoke(app, ["pseudonymize", str(tmp_path / "in"), str(tmp_path / "out"), "--format", "i2b2",
                                      "--to", "brat", "-n", "50", "--seed", "3"])
    assert result.exit_code == 0 and "(surrogates)" in result.output, result.output  # the exports' default
    [doc] = read_corpus(tmp_path / "out", "brat", strict=True)
    assert [s.source_type for s in doc.spans] == [s.source_type for s in DOC.spans]
    assert "zqx" not in doc.text and doc.text.startswith("Seen ") and doc.text.endswith(".")


def test_pseudonymize_draws_from_the_operating_system_and_no_small_seed_replays_it(tmp_path, monkeypatch, embeddings):
    """Without --seed the draws cannot be replayed: two runs differ, and no seed an attacker would
    try first gives the same output (each redraw would give an original away); --seed warns."""
    from typer.testing import CliRunner

    from deidpool.cli import app
    from deidpool.corpus.formats import read_corpus, write_corpus

    monkeypatch.setattr("deidpool.representer.embeddings.load_embeddings", lambda spec: embeddings)
    write_corpus([DOC], tmp_path / "in", "i2b2")

    def run(out: str, *options: str) -> tuple[str, str]:
        result = CliRunner().invoke(app, ["pseudonymize", str(tmp_path / "in"), str(tmp_path / out), "--format",
                                          "i2b2", *options])
        assert result.exit_code == 0, result.output
        return read_corpus(tmp_path / out, "i2b2")[0].text, result.output

    (first, said), (second, _) = run("a"), run("b")
    assert first != second and "warning" not in said
    pseudonymizer = Pseudonymizer(embeddings, 100, "surrogates", "en")
    replays = {pseudonymizer.document(DOC, random.Random(seed)).text for seed in range(200)}
    assert first not in replays and second not in replays
    seeded, said = run("c", "--seed", "7")
    assert "replayable" in said and seeded == pseudonymizer.document(DOC, random.Random(7)).text


def test_pseudonymize_command_draws_surrogates(tmp_path, monkeypatch, embeddings):
    from typer.testing import CliRunner

    from deidpool.cli import app
    from deidpool.corpus.formats import read_corpus, write_corpus

    monkeypatch.setattr("deidpool.representer.embeddings.load_embeddings", lambda spec: embeddings)
    write_corpus([DOC], tmp_path / "in", "i2b2")
    arguments = ["pseudonymize", str(tmp_path / "in"), str(tmp_path / "out"), "--format", "i2b2",
                 "--pseudonymization", "surrogates", "-n", "1"]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 0 and "(surrogates)" in result.output, result.output
    [doc] = read_corpus(tmp_path / "out", "i2b2")
    assert [s.source_type for s in doc.spans] == [s.source_type for s in DOC.spans]
    assert not {"Smith", "BOSTON", "12", "zqx"} & {s.text for s in doc.spans}
    refused = CliRunner().invoke(app, [*arguments[:-4], "--pseudonymization", "clusters"])
    assert refused.exit_code == 2 and "Invalid value" in refused.output


@pytest.fixture(scope="module")
def numbers():
    """A pseudonymizer whose vocabulary knows every number by its digit shape, as GloVe does."""
    shapes = ["0" * width for width in range(1, 8)]
    kv = KeyedVectors(2)
    kv.add_vectors(shapes, np.array([[1, width] for width in range(1, 8)], dtype=np.float32))
    return Pseudonymizer(Embeddings(kv, "shapes"), 10)


@pytest.mark.parametrize("word, category, expected", [
    ("7", None, [str(v) for v in range(1, 10)]),  # a month or a day, one digit
    ("14", "DATE", [str(v) for v in range(10, 32)]),  # a day
    ("09", "DATE", [f"{v:02}" for v in range(1, 13)]),  # a month, zero-padded
    ("12", None, ["10", "11", "12"]),
    ("42", None, [str(v) for v in range(10, 60)]),  # minutes or seconds
    ("00", None, [f"{v:02}" for v in range(60)]),
    ("75", None, [str(v) for v in range(10, 100)]),
    ("2067", "DATE", [str(v) for v in range(2057, 2078)]),  # a nearby year
    ("95", "AGE", [str(v) for v in range(90, 100)]),  # over 89 stays over 89
    ("105", "AGE", [str(v) for v in range(100, 120)]),
    ("45", "AGE", [str(v) for v in range(10, 90)]),  # under 90 stays under 90
    ("95", None, [str(v) for v in range(10, 100)]),
    ("555", "PHONE", [str(v) for v in range(100, 1000)]),
])
def test_number_surrogates_keep_width_padding_and_range(numbers, word, category, expected):
    candidates = numbers.candidates(word, category)
    assert list(candidates) == expected and len(candidates) == len(expected)
    rng = random.Random(0)
    draws = [numbers.pseudonym(word, rng, category) for _ in range(500)]
    assert set(draws) <= set(expected) and len(set(draws)) > 1
    if len(expected) <= 25:
        assert set(draws) == set(expected)  # uniform over the whole set


def test_long_numbers_draw_any_number_of_their_width_lazily(numbers):
    rng = random.Random(0)
    for word, first_digits in (("5551234", "123456789"), ("0551234", "0123456789")):
        candidates = numbers.candidates(word, "PHONE")
        assert candidates == NumberCandidates(range(0 if word[0] == "0" else 10 ** 6, 10 ** 7), 7)
        draws = [numbers.pseudonym(word, rng, "PHONE") for _ in range(500)]
        assert all(len(d) == 7 and d.isdigit() and d in candidates for d in draws)
        assert {d[0] for d in draws} == set(first_digits) and len(set(draws)) > 490
    phones = numbers.candidates("5551234")
    assert len(phones) == 9_000_000 and phones[0] == "1000000" and phones[-1] == "9999999"
    assert list(phones[:2]) == ["1000000", "1000001"]
    assert "0551234" not in phones and "555123" not in phones and 5551234 not in phones and "555123a" not in phones


@pytest.mark.parametrize("category", [None, "DATE", "AGE", "PHONE"])
def test_every_number_is_among_its_own_surrogates_of_its_width_and_padding(category):
    for width in range(1, 5):
        for value in range(10 ** width):
            word = f"{value:0{width}}"
            candidates = number_candidates(word, category)
            assert word in candidates and candidates.width == width == len(candidates[0]) == len(candidates[-1])
            assert (candidates[0][0] == "0") == (word[0] == "0")  # padded words only get padded surrogates


def test_candidates_are_the_set_pseudonyms_are_drawn_from(embeddings):
    pseudonymizer = Pseudonymizer(embeddings, 3)
    assert list(pseudonymizer.candidates("Smith", "PATIENT")) == embeddings.neighbours("Smith", 3)
    rng = random.Random(0)
    draws = {pseudonymizer.pseudonym("smith", rng) for _ in range(100)}
    assert draws == set(pseudonymizer.candidates("smith"))
    assert {pseudonymizer.pseudonym("SMITH", rng) for _ in range(100)} == {w.upper() for w in draws}


def test_numbers_are_replaced_whether_or_not_the_vocabulary_knows_them(embeddings):
    """A number's surrogates need no vocabulary: an unknown phone number must not reach an
    export (or a FastText embedding, which would spell it out through subwords) as it is."""
    pseudonymizer = Pseudonymizer(embeddings, 9)
    assert not embeddings.is_known("5551234") and pseudonymizer.replaceable("5551234")
    assert len(pseudonymizer.candidates("5551234", "PHONE")) == 9_000_000


@pytest.mark.parametrize("word", [".", "/-"])
def test_words_that_are_not_replaced_are_their_only_candidate(embeddings, word):
    pseudonymizer = Pseudonymizer(embeddings, 9)
    assert pseudonymizer.candidates(word, "DATE") == [word]
    assert pseudonymizer.pseudonym(word, random.Random(0), "DATE") == word
    assert Pseudonymizer(embeddings, 1).candidates("Smith") == ["Smith"]
    assert Pseudonymizer(embeddings, 1).candidates("12", "DATE") == ["12"]


def test_tags_name_the_category():
    assert ([tag_category(t) for t in ("B-DATE", "I-AGE", "S-AGE", "E-PHONE", "O")]
            == ["DATE", "AGE", "AGE", "PHONE", None])


def test_categories_reach_the_pseudonymizer_from_the_tags(numbers):
    tokens = [Token("aged", 0, 4), Token("95", 5, 7), Token("on", 8, 10), Token("14", 11, 13), Token("95", 14, 16)]
    sentence = LabeledSentence(tokens, casing_ids(tokens), ["O", "S-AGE", "O", "B-DATE", "B-ID"])
    calls = []

    class Recording(Pseudonymizer):
        def pseudonym(self, word, rng, category=None):
            calls.append((word, category))
            return super().pseudonym(word, rng, category)

    Recording(numbers.embeddings, 10).labeled_sentences([sentence], random.Random(0))
    assert calls == [("95", "AGE"), ("14", "DATE"), ("95", "ID")]
    ages = {numbers.sentence(sentence, random.Random(seed))[1] for seed in range(200)}
    ids = {numbers.sentence(sentence, random.Random(seed))[4] for seed in range(200)}
    assert ages <= {str(v) for v in range(90, 100)} and not ids <= ages


def test_documents_keep_ages_over_89(numbers):
    document = Document("d", "Age 95 seen 09 / 14 / 2067.",
                        (Span(4, 6, "AGE", "95"), Span(12, 26, "DATE", "09 / 14 / 2067")))
    for seed in range(50):
        age, date = (span.text for span in numbers.document(document, random.Random(seed)).spans)
        month, day, year = date.split(" / ")
        assert 90 <= int(age) <= 99 and len(month) == 2 and 1 <= int(month) <= 12
        assert 10 <= int(day) <= 31 and 2057 <= int(year) <= 2077


@pytest.mark.parametrize("label", ["AGE", "Age", "EDAD_SUJETO_ASISTENCIA"])
def test_every_corpus_label_of_an_age_keeps_ages_over_89_over_89(label):
    """The rule goes by the label's i2b2 type, whatever the corpus calls it (PhysioNet "Age",
    MEDDOCAN "EDAD_SUJETO_ASISTENCIA"), under every scheme and in the surrogates' shapes."""
    from deidpool.pseudonymization.surrogates import span_surrogates

    for candidates in (number_block("95", label), number_candidates("95", label)):
        assert {int(value) for value in candidates} <= set(range(90, 120))
    drawn = {span_surrogates(["95"], label, "es", random.Random(seed))[0] for seed in range(40)}
    assert all(90 <= int(value) <= 99 for value in drawn) and len(drawn) > 1


def test_labeled_sentences_pass_sentences_without_phi_on_and_follow_the_pseudonyms(embeddings):
    plain, phi = prepare_document(Document("p", "Seen at the lab.")), prepare_document(DOC)
    pseudonymizer = Pseudonymizer(embeddings, 3)
    for seed in range(10):
        [kept, replaced] = pseudonymizer.labeled_sentences([*plain, *phi], random.Random(seed))
        assert kept is plain[0]
        assert [t.text for t in replaced.tokens] == pseudonymizer.sentence(phi[0], random.Random(seed))
        assert [(t.start, t.end) for t in replaced.tokens] == [(t.start, t.end) for t in phi[0].tokens]
        assert replaced.tags == phi[0].tags and replaced.casing.tolist() == casing_ids(replaced.tokens).tolist()


@pytest.mark.parametrize("category", [None, "DATE", "AGE"])
@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_number_blocks_partition_the_numbers_of_a_width_and_padding(width, category):
    """Every number is in its block, no number is alone in it ("0" and "00" included), and
    every number of a block has that same block."""
    for value in range(10 ** width):
        for word in {str(value).zfill(width)} if len(str(value)) <= width else ():
            block = number_block(word, category)
            assert word in block and len(block) > 1, (word, category)
            for other in (block[0], block[len(block) // 2], block[-1]):
                assert number_block(other, category) == block, (word, other, category)


@pytest.mark.parametrize("word, category, block", [
    ("14", "DATE", ("13", "31")), ("7", "DATE", ("0", "9")), ("0", "DATE", ("0", "9")), ("09", "DATE", ("00", "09")),
    ("00", "DATE", ("00", "09")), ("11", "DATE", ("10", "12")), ("0", "AGE", ("0", "9")),
    ("45", "DATE", ("32", "59")), ("75", None, ("60", "99")), ("2010", "DATE", ("2000", "2019")),
    ("1500", "DATE", ("1000", "1899")), ("95", "AGE", ("90", "99")), ("45", "AGE", ("10", "89")),
    ("104", "AGE", ("100", "119")), ("617", "PHONE", ("100", "999")),
    ("95", "EDAD_SUJETO_ASISTENCIA", ("90", "99")), ("95", "Age", ("90", "99")), ("45", "Age", ("10", "89"))])
def test_number_blocks_keep_dates_ages_and_years_plausible(word, category, block):
    found = number_block(word, category)
    assert (found[0], found[-1]) == block


def test_under_the_groups_scheme_every_candidate_has_the_same_candidates(embeddings):
    """A surrogate drawn from a group could have been drawn for any member of it: the
    candidates of a word are the candidates of each of its candidates."""
    pseudonymizer = Pseudonymizer(embeddings, 3, scheme="groups")
    vocabulary = embeddings.kv.index_to_key[:embeddings.neighbour_rows]
    replaced = [word for word in vocabulary if pseudonymizer.replaceable(word) and not word.isdigit()]
    assert replaced
    for word in replaced:
        candidates = pseudonymizer.candidates(word)
        assert word in candidates and 3 <= len(candidates) < 6
        assert all(sorted(pseudonymizer.candidates(other)) == sorted(candidates) for other in candidates)
    assert pseudonymizer.candidates("14", "DATE") == number_block("14", "DATE")
    table = pseudonymizer.candidate_table()
    for word in replaced:
        row = vocabulary.index(word)
        assert table[row, 0] == row and sorted(vocabulary[i] for i in table[row] if i >= 0) == sorted(
            pseudonymizer.candidates(word))


def test_an_unknown_scheme_is_refused(embeddings):
    with pytest.raises(ValueError, match="unknown pseudonymization scheme 'clusters'"):
        Pseudonymizer(embeddings, 3, scheme="clusters")


# Names, street words and Spanish function words; "bill" and "will" were once kept as English
# stop words, "de" and "la" as stop words of no list at all.
NAMED = {"smith": [1, 0, 0, 0], "jones": [0.9, 0.1, 0, 0], "bill": [0.8, 0.2, 0, 0], "will": [0.7, 0, 0.3, 0],
         "boston": [0, 1, 0, 0], "calle": [0, 0.9, 0.1, 0], "avenida": [0.1, 0.9, 0, 0],
         "de": [0, 0, 1, 0], "la": [0, 0, 0.9, 0.1], "del": [0, 0.1, 0.9, 0], "lives": [0, 0, 0, 1]}
STREET = Document("s", "Bill PRZYBYLO lives at Calle de la Rosa 12.",
                  (Span(0, 13, "PATIENT", "Bill PRZYBYLO"), Span(23, 42, "STREET", "Calle de la Rosa 12")))


@pytest.fixture(scope="module")
def named():
    kv = KeyedVectors(4)
    kv.add_vectors(list(NAMED), np.array(list(NAMED.values()), dtype=np.float32))
    return Embeddings(kv, "named")


def phi_words(sentences) -> list[str]:
    return [t.text for s in sentences for t, tag in zip(s.tokens, s.tags) if tag != "O"]


@pytest.mark.parametrize("scheme", ["neighbours", "groups"])
def test_no_alphanumeric_phi_token_is_kept_stop_words_unknown_words_and_spanish_de_included(named, scheme):
    """"Bill", "de", "la" get candidates like any word, the unknown "PRZYBYLO" and "Rosa" those of
    their category's stand-in, in their casing; in exports (`labeled_sentences`) and in text."""
    pseudonymizer = Pseudonymizer(named, 3, scheme)
    sentences = prepare_document(STREET)
    originals = phi_words(sentences)
    assert originals == ["Bill", "PRZYBYLO", "Calle", "de", "la", "Rosa", "12"]
    assert all(len(pseudonymizer.candidates(word, "PATIENT")) > 1 for word in originals)
    drawn = [phi_words(pseudonymizer.labeled_sentences(sentences, random.Random(seed))) for seed in range(40)]
    texts = [pseudonymizer.document(STREET, random.Random(seed)).spans for seed in range(40)]  # `deidpool pseudonymize`
    for position, original in enumerate(originals):
        assert {words[position] for words in drawn} - {original}, original  # replaced, not kept
    assert all(words[1] != "PRZYBYLO" and words[1].isupper() for words in drawn)  # its shape, another word
    assert all(words[5] != "Rosa" and words[5].istitle() for words in drawn)
    assert all("PRZYBYLO" not in name.text and "Rosa" not in street.text for name, street in texts)
    assert {street.text.split()[1] for _, street in texts} - {"de"}


def test_unknown_words_take_their_category_stand_in_whatever_the_word(named):
    pseudonymizer = Pseudonymizer(named, 3, "groups")
    assert pseudonymizer.stand_in("PATIENT") == pseudonymizer.stand_in("PTName") == "smith"  # NAME
    assert pseudonymizer.stand_in("CALLE") == pseudonymizer.stand_in("LOCATION") == "boston"
    assert pseudonymizer.stand_in("PROFESSION") == pseudonymizer.stand_in("CUSTOM") == "smith"  # unknown: first row
    assert (pseudonymizer.candidates("Przybylo", "PATIENT") == pseudonymizer.candidates("Retterer", "DOCTOR")
            == pseudonymizer.candidates("smith"))
    assert pseudonymizer.candidates("Rosa", "STREET") == pseudonymizer.candidates("boston")
    assert set(Pseudonymizer(named, 2).candidates("Przybylo", "PATIENT")) == {"smith", "jones"}
    assert Pseudonymizer(named, 1).candidates("Przybylo", "PATIENT") == ["Przybylo"]


def test_pseudonymize_draws_surrogates_in_the_notes_language_it_detects(tmp_path, monkeypatch, embeddings):
    """Spanish notes given without --language get Spanish surrogates (an English default would
    draw English months and keep nothing Spanish)."""
    from typer.testing import CliRunner

    from deidpool.cli import app
    from deidpool.corpus.formats import read_corpus, write_corpus

    monkeypatch.setattr("deidpool.representer.embeddings.load_embeddings", lambda spec: embeddings)
    text = "La paciente acudió a la consulta el 3 de marzo de 2018 con dolor abdominal y sin fiebre."
    start = text.index("3 de marzo")
    note = Document("es", text, (Span(start, start + len("3 de marzo de 2018"), "FECHAS", "3 de marzo de 2018"),))
    write_corpus([note], tmp_path / "in", "brat")
    result = CliRunner().invoke(app, ["pseudonymize", str(tmp_path / "in"), str(tmp_path / "out"), "--format",
                                      "brat"])
    assert result.exit_code == 0 and "the notes are in es (detected" in result.output, result.output
    [span] = read_corpus(tmp_path / "out", "brat")[0].spans
    months = {"enero", "febrero", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre", "noviembre",
              "diciembre", "lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo"}
    day, first, month, second, year = span.text.split(" ")
    assert (first, second) == ("de", "de") and month.lower() in months, span.text
