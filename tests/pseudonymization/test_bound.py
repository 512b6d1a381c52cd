"""Tests of pseudonymization.bound: the re-identification bound worked out by hand on a toy neighbour
graph and on number ranges, checked against brute force, the empirical prior against every guess
rule, and the same from cold and warm caches."""

import itertools
from collections import Counter
from importlib.metadata import version

import numpy as np
import pytest
from gensim.models import KeyedVectors

from deidpool.pseudonymization import bound
from deidpool.pseudonymization.bound import format_bound, reidentification_bound, token_success
from deidpool.pseudonymization.pseudonymize import Pseudonymizer, same_casing
from deidpool.representer.embeddings import Embeddings

# Words at angles (degrees) on the unit circle, so that with N = 2 each word's candidates are
# itself and its nearest word in angle. "dijon" lies outside the neighbour vocabulary (all rows
# but the last); "zqxw" and "zqxy" are unknown to wordfreq; "and" is a function word, replaced
# like any other; "2010" is a number, no word original. Nearest neighbours: paris <-> lyon,
# nantes -> lyon, 2010 -> nantes, rennes <-> brest, zqxw <-> zqxy, rome <-> and, dijon -> lyon.
# wordfreq: paris > lyon > nantes, brest > rennes, and > rome.
ANGLES = {"paris": 0, "lyon": 10, "nantes": 25, "2010": 55, "rennes": 100, "brest": 110, "zqxw": 150,
          "zqxy": 160, "rome": 195, "and": 200, "dijon": 7}


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DEIDPOOL_CACHE", str(tmp_path))


def circle(angles: dict[str, float]) -> Pseudonymizer:
    """N = 2 over words at these angles (degrees), all but the last in the neighbour vocabulary."""
    kv = KeyedVectors(2)
    radians = np.radians(list(angles.values()))
    kv.add_vectors(list(angles), np.stack([np.cos(radians), np.sin(radians)], axis=1).astype(np.float32))
    return Pseudonymizer(Embeddings(kv, "toy", neighbour_vocab=len(angles) - 1), 2)


@pytest.fixture(scope="module")
def toy() -> Pseudonymizer:
    return circle(ANGLES)


def success(report, category, what, prior):
    return report["categories"][category][f"{what}_success"][prior]


def test_toy_graph_by_hand(toy):
    tokens = [("Paris", "CITY"), ("paris", "CITY"), ("Lyon", "CITY"), ("nantes", "CITY"), ("and", "CITY"),
              (",", "CITY"), ("Rennes", "NAME"), ("brest", "NAME"), ("zqxw", "NAME"), ("rome", "NAME"),
              (",", "NAME")]
    report = reidentification_bound(tokens, toy)
    assert report["neighbours"] == 2 and report["priors"] == ["uniform", "frequency", "empirical"]
    city, name, overall = report["categories"]["CITY"], report["categories"]["NAME"], report["overall"]
    assert (city["occurrences"], city["hidden"], city["not_hidden"]) == (6, 5, 1)  # "," stays
    assert (name["occurrences"], name["hidden"], name["not_hidden"]) == (5, 4, 1)
    assert (overall["occurrences"], overall["hidden"], overall["not_hidden"]) == (11, 9, 2)
    assert overall["one_over_n"] == 0.5
    # Uniform: mean over s in C(o) of 1/|R(s)|, with R(paris) = {paris, lyon},
    # R(lyon) = {lyon, paris, nantes}, R(nantes) = {nantes}, R(rennes) = R(brest) = {rennes, brest},
    # R(zqxw) = {zqxw, zqxy}, R(rome) = R(and) = {rome, and}:
    # paris, lyon (1/2 + 1/3) / 2 = 5/12; nantes (1 + 1/3) / 2 = 2/3; and, rennes, brest, zqxw,
    # rome 1/2 = 1/N.
    assert success(report, "CITY", "mean", "uniform") == pytest.approx((3 * 5 / 12 + 2 / 3 + 1 / 2) / 5)
    assert success(report, "CITY", "worst", "uniform") == pytest.approx(2 / 3)
    assert success(report, "NAME", "mean", "uniform") == pytest.approx(1 / 2)
    assert success(report, "NAME", "worst", "uniform") == pytest.approx(1 / 2)
    # Frequency: the attacker guesses paris from paris and lyon: paris 1, lyon 0, nantes 1/2;
    # brest 1, rennes 0; zqxw and zqxy tie at the floor: 1/2; and beats rome: and 1, rome 0.
    assert success(report, "CITY", "mean", "frequency") == pytest.approx((1 + 1 + 0 + 1 / 2 + 1) / 5)
    assert success(report, "CITY", "worst", "frequency") == 1.0
    assert success(report, "NAME", "mean", "frequency") == pytest.approx((0 + 1 + 1 / 2 + 0) / 4)
    # Empirical: by category and casing shape, CITY "Paris" and "Lyon" tie at either surrogate
    # (1/2 each), CITY "paris" and "nantes" (1 + 1/2) / 2 each (both can become lyon), "and" 1;
    # every NAME token is alone in its shape or among originals its surrogates cannot come from: 1.
    assert success(report, "CITY", "mean", "empirical") == pytest.approx(7 / 10)
    assert success(report, "NAME", "mean", "empirical") == 1.0
    assert report["overall"]["mean_success"] == pytest.approx({"uniform": 53 / 108, "frequency": 5 / 9,
                                                               "empirical": 5 / 6})


def test_word_outside_neighbour_vocabulary_joins_the_possible_originals(toy):
    report = reidentification_bound([("Paris", "CITY"), ("nantes", "CITY"), ("Dijon", "CITY")], toy)
    # dijon -> lyon: R(lyon) = {lyon, paris, nantes, dijon}, R(dijon) = {dijon}:
    # paris (1/2 + 1/4) / 2, nantes (1 + 1/4) / 2, dijon (1 + 1/4) / 2; frequency: 1, 1/2, 1/2.
    assert success(report, "CITY", "mean", "uniform") == pytest.approx((3 / 8 + 5 / 8 + 5 / 8) / 3)
    assert success(report, "CITY", "mean", "frequency") == pytest.approx((1 + 1 / 2 + 1 / 2) / 3)


def test_a_word_without_a_vector_is_hidden_among_its_category_stand_in_candidates():
    """An unknown word draws from its category's stand-in's candidates: one original per
    category, among the possible originals of those candidates (no longer "not hidden")."""
    pseudonymizer = circle({"smith": 0, "jones": 10, "boston": 100, "denver": 110, "lyon": 200})
    tokens = [("Przybylo", "PATIENT"), ("PRZYBYLO", "CITY"), ("smith", "PATIENT"), ("boston", "CITY")]
    # C(Przybylo) = {smith, jones} as a PATIENT, {boston, denver} as a CITY; R(smith) = R(jones) =
    # {smith, jones, Przybylo as a PATIENT}, R(boston) = R(denver) = {boston, denver, Przybylo as a CITY}.
    found = token_success(tokens, pseudonymizer)
    assert all(found[token]["uniform"] == pytest.approx(1 / 3) for token in tokens)
    assert found["Przybylo", "PATIENT"]["frequency"] == 0.0  # wordfreq does not know it: the others win
    assert reidentification_bound(tokens, pseudonymizer)["overall"]["not_hidden"] == 0


def test_numbers_by_hand(toy):
    found = token_success([("14", "DATE"), ("25", "DATE"), ("07", "DATE"), ("95", "AGE")], toy)
    # 2-digit originals in DATE and their candidates: 00 -> 00..59, 01..09 -> 01..12,
    # 10..12 -> 10..12, 13..31 -> 10..31, 32..59 -> 10..59, 60..99 -> 10..99. "14" and "25"
    # draw from 10..31: R(s) holds all 100 numbers for s in 10..12 and 88 for s in 13..31.
    uniform = (3 / 100 + 19 / 88) / 22
    assert found["14", "DATE"]["uniform"] == pytest.approx(uniform)
    assert found["25", "DATE"]["uniform"] == pytest.approx(uniform)
    # wordfreq ranks 2-digit numbers by first digit (1 highest): the guess is one of 10..19 in R(s).
    assert found["14", "DATE"]["frequency"] == pytest.approx((3 / 10 + 19 / 7) / 22)
    assert found["25", "DATE"]["frequency"] == 0.0
    # Empirical (each once): 07 draws one of 12 surrogates, 14 and 25 one of 22, so 10..12 say
    # 07 (1/12 > 1/22) and 14 and 25 tie on 13..31: 19/2 of their 22 surrogates.
    assert found["14", "DATE"]["empirical"] == pytest.approx(19 / 44)
    assert found["07", "DATE"]["empirical"] == 1.0
    # "07" draws from 01..12; R(s) = {00, ..., 09} for s < 10, all ten equally frequent (wordfreq's
    # total for "00" is not taken as its frequency).
    assert found["07", "DATE"]["uniform"] == pytest.approx((9 / 10 + 3 / 100) / 12)
    assert found["07", "DATE"]["frequency"] == pytest.approx((9 / 10) / 12)
    # An age over 89 draws from 90..99, the candidates of exactly the ten ages 90..99.
    assert found["95", "AGE"] == pytest.approx({"uniform": 0.1, "frequency": 0.1, "empirical": 1.0})


def brute_force(pseudonymizer: Pseudonymizer, word: str, category: str) -> dict[str, float]:
    """The success by definition, over every number of the width as an explicit set."""
    frequency = bound._Frequency("en")
    originals = [str(v).zfill(len(word)) for v in range(10 ** len(word))]
    drawn = {o: set(pseudonymizer.candidates(o, category)) for o in originals}
    result = {}
    for prior in [lambda o: 1.0, frequency]:
        hits = []
        for s in pseudonymizer.candidates(word, category):
            possible = [o for o in originals if s in drawn[o]]
            best = max(map(prior, possible))
            top = [o for o in possible if prior(o) == best]
            hits.append((word in top) / len(top))
        result["uniform" if len(result) == 0 else "frequency"] = sum(hits) / len(hits)
    return result


@pytest.mark.parametrize("token", [("7", "DATE"), ("0", "DATE"), ("123", "ID"), ("042", "AGE"), ("120", "AGE"),
                                   ("59", "DATE")])
def test_numbers_against_brute_force(toy, token):
    assert token_success([token], toy)[token] == pytest.approx({**brute_force(toy, *token), "empirical": 1.0})


def test_wide_numbers_analytic_equals_enumeration(toy, monkeypatch):
    tokens = [("12345", "ID"), ("01234", "ID"), ("00042", "AGE"), ("00095", "AGE"), ("54321", "AGE")]
    analytic = token_success(tokens, toy)
    # 12345 draws from 10000..99999, which every 5-digit number can become: 1/10^5; 01234 from all
    # of 00000..99999, and R(s) for s < 10000 holds the 10^4 numbers with a leading zero.
    assert analytic["12345", "ID"]["uniform"] == pytest.approx(1e-5)
    assert analytic["01234", "ID"]["uniform"] == pytest.approx((1 + 0.9) / 1e5)
    monkeypatch.setattr(bound, "ENUMERATED_WIDTH", 5)
    enumerated = token_success(tokens, toy)
    for token in tokens:
        assert enumerated[token] == pytest.approx(analytic[token])


def test_seven_digit_number(toy):
    report = reidentification_bound([("5551234", "PHONE"), ("0551234", "PHONE")], toy)["overall"]
    # 5551234 draws from 10^6..10^7 - 1, which all 10^7 numbers can become; 0551234 from every
    # 7-digit string, with 10^6 possible originals (those with a leading zero) below 10^6.
    assert report["mean_success"]["uniform"] == pytest.approx((1e-7 + (1 + 0.9) / 1e7) / 2)
    assert report["worst_success"]["uniform"] == pytest.approx(1.9e-7)
    # wordfreq: the 10^6 numbers starting with 1 are the most frequent; those with a leading
    # zero are the least.
    assert report["mean_success"]["frequency"] == pytest.approx((0 + 0.1 / 1e6) / 2)


def test_nothing_hidden_needs_no_neighbour_table(toy, monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("neighbour table computed")

    monkeypatch.setattr(Embeddings, "neighbour_table", fail)
    report = reidentification_bound([("paris", "CITY"), ("14", "DATE")], Pseudonymizer(toy.embeddings, 1))
    assert report["overall"] | {"one_over_n": 1.0} == {
        "occurrences": 2, "hidden": 0, "not_hidden": 2,
        "mean_success": {"uniform": None, "frequency": None, "empirical": None},
        "worst_success": {"uniform": None, "frequency": None, "empirical": None}, "one_over_n": 1.0}
    assert reidentification_bound([], toy)["categories"] == {}


def test_format_bound(toy):
    report = reidentification_bound([("paris", "CITY"), (",", "NAME")], toy)
    lines = format_bound(report).splitlines()
    assert "N = 2" in lines[0]
    assert lines[2].startswith("| category | tokens | hidden | not hidden | mean uniform | worst uniform |")
    assert lines[2].endswith("| mean empirical | worst empirical |")
    assert lines[4] == "| CITY | 1 | 1 | 0 | 0.417 | 0.417 | 1 | 1 | 1 | 1 |"
    assert lines[5] == "| NAME | 1 | 0 | 1 | - | - | - | - | - | - |"
    assert lines[6].startswith("| overall | 2 | 1 | 1 | 0.417 |")
    # A report made before the empirical prior (an older export's header) has the columns it has.
    older = {**report, "priors": ["uniform", "frequency"]}
    assert format_bound(older).splitlines()[4] == "| CITY | 1 | 1 | 0 | 0.417 | 0.417 | 1 | 1 |"


def word_brute_force(pseudonymizer: Pseudonymizer, tokens: list[tuple[str, str]]) -> dict:
    """The success of word tokens by definition, with explicit candidate sets: the originals
    are the neighbour vocabulary's words that are no numbers, and the tokens' words."""
    frequency = bound._Frequency("en")
    vocabulary = pseudonymizer.embeddings.kv.index_to_key[:pseudonymizer.embeddings.neighbour_vocab]
    drawn = {word: set(pseudonymizer.candidates(word)) for word in vocabulary if not word.isdigit()}
    drawn |= {word.lower(): {w.lower() for w in pseudonymizer.candidates(word)} for word, _ in tokens}
    result = {}
    for token in tokens:
        original = token[0].lower()
        for name, prior in [("uniform", lambda o: 1.0), ("frequency", frequency)]:
            hits = []
            for s in drawn[original]:
                possible = [o for o, found in drawn.items() if s in found]
                top = [o for o in possible if prior(o) == max(map(prior, possible))]
                hits.append((original in top) / len(top))
            result.setdefault(token, {})[name] = sum(hits) / len(hits)
    return result


def test_words_against_brute_force(toy):
    tokens = [("Paris", "CITY"), ("lyon", "CITY"), ("Nantes", "CITY"), ("Dijon", "CITY"), ("rennes", "NAME"),
              ("zqxw", "NAME"), ("ROME", "NAME")]
    found = token_success(tokens, toy)
    empirical = empirical_by_definition(toy, tokens)
    for token, expected in word_brute_force(toy, tokens).items():
        assert found[token] == pytest.approx({**expected, "empirical": empirical[token]})


def empirical_by_definition(pseudonymizer: Pseudonymizer, tokens: list[tuple[str, str]]) -> dict:
    """The empirical prior's success of each distinct token by definition, with explicit
    candidate sets (words lower-cased): its possible originals are the tokens' originals of its
    category and casing shape (numbers: of its width), each weighed by its count / |C|."""
    def original(token):
        word, category = token
        number = word.isdigit()
        return (category, len(word) if number else same_casing("ab", word)), word if number else word.lower()

    counts = Counter(map(original, tokens))
    drawn = {original(t): {w if w.isdigit() else w.lower() for w in pseudonymizer.candidates(*t)} for t in tokens}
    result = {}
    for token in dict.fromkeys(tokens):
        mine = original(token)
        weight = {key: counts[key] / len(drawn[key]) for key in counts if key[0] == mine[0]}
        hits = []
        for s in drawn[mine]:
            possible = [key for key in weight if s in drawn[key]]
            top = [key for key in possible if weight[key] == max(weight[p] for p in possible)]
            hits.append((mine in top) / len(top))
        result[token] = sum(hits) / len(hits)
    return result


def test_numbers_and_words_of_an_export_against_the_empirical_definition(toy):
    tokens = [("14", "DATE")] * 3 + [("25", "DATE"), ("07", "DATE"), ("7", "DATE"), ("3", "DATE"), ("12", "DATE"),
              ("2010", "DATE"), ("2015", "DATE"), ("2015", "DATE"), ("2024", "DATE"), ("123", "ID"), ("042", "ID"),
              ("Paris", "CITY"), ("Paris", "CITY"), ("lyon", "CITY"), ("Lyon", "CITY"), ("Nantes", "CITY"),
              ("Dijon", "CITY"), ("brest", "NAME"), ("rennes", "NAME"), ("rennes", "NAME")]
    found = token_success(tokens, toy)
    for token, expected in empirical_by_definition(toy, tokens).items():
        assert found[token]["empirical"] == pytest.approx(expected), token


def mean_empirical(found: dict, tokens: list[tuple[str, str]]) -> float:
    return sum(found[token]["empirical"] for token in tokens) / len(tokens)


def rule_success(drawn: dict[str, set[str]], counts: Counter, guess: dict[str, str]) -> float:
    """Mean success, over the tokens `counts` counts, of the rule that names `guess[s]` for the
    surrogate s (each original draws uniformly from `drawn[original]`)."""
    right = sum(counts[o] * sum(guess[s] == o for s in drawn[o]) / len(drawn[o]) for o in counts)
    return right / sum(counts.values())


@pytest.mark.parametrize("tokens", [
    # Words, all of |C| = 2 (hand-worked in test_the_empirical_prior_by_hand).
    [("Paris", "CITY")] * 3 + [("Lyon", "CITY")] + [("Nantes", "CITY")] * 2,
    # Numbers of unequal |C|: 12 draws from 10..12, 15 from 10..31. The posterior says 12 on
    # 10..12 (1/3 > 2/22) and 15 on 13..31: (1 + 2 * 19/22) / 3 = 10/11; naming the more frequent
    # original of R(s), 15, everywhere would get only 2/3.
    [("12", "DATE")] + [("15", "DATE")] * 2,
    [("07", "DATE"), ("12", "DATE"), ("12", "DATE"), ("11", "DATE"), ("Paris", "CITY"), ("Nantes", "CITY")]])
def test_the_empirical_prior_beats_every_fixed_guess_rule(toy, tokens):
    """The empirical attacker is the best rule from surrogate to original on the export's own
    tokens: its mean success is the largest of every rule's (all enumerated), at least that of
    always naming the category's most frequent original."""
    found = token_success(tokens, toy)
    counts = Counter(word.lower() for word, _ in tokens)
    drawn = {word.lower(): {w.lower() for w in toy.candidates(word, category)} for word, category in tokens}
    surrogates = sorted(set().union(*drawn.values()))
    rules = itertools.product(*([o for o in drawn if s in drawn[o]] for s in surrogates))
    best = max(rule_success(drawn, counts, dict(zip(surrogates, rule))) for rule in rules)
    assert mean_empirical(found, tokens) == pytest.approx(best)
    assert mean_empirical(found, tokens) >= max(counts.values()) / len(tokens)  # always the most frequent
    if tokens[0] == ("12", "DATE"):
        assert mean_empirical(found, tokens) == pytest.approx(10 / 11)


def test_the_empirical_prior_by_hand(toy):
    """R(s) holds the export's originals of the token's category and casing shape."""
    tokens = ([("Paris", "CITY")] * 3 + [("Lyon", "CITY")] + [("Nantes", "CITY")] * 2 + [("paris", "CITY")]
              + [("Rennes", "NAME"), ("Brest", "NAME"), ("Paris", "NAME"), ("zqxw", "NAME"), (",", "NAME")])
    report = reidentification_bound(tokens, toy)
    found = token_success(tokens, toy)
    # Capitalized CITY: C(paris) = {paris, lyon}, C(lyon) = {lyon, paris}, C(nantes) = {nantes, lyon};
    # R(paris) = {paris x3, lyon x1} -> paris; R(lyon) = {paris x3, lyon x1, nantes x2} -> paris;
    # R(nantes) = {nantes} -> nantes. Paris 1, Lyon 0, Nantes (1 + 0) / 2.
    assert [found[w, "CITY"]["empirical"] for w in ("Paris", "Lyon", "Nantes")] == [1.0, 0.0, 0.5]
    # Lower-case "paris" shows another casing: alone in its class, 1.
    assert found["paris", "CITY"]["empirical"] == 1.0
    assert success(report, "CITY", "mean", "empirical") == pytest.approx((3 * 1 + 0 + 2 * 0.5 + 1) / 7)
    assert success(report, "CITY", "worst", "empirical") == 1.0
    # NAME: Rennes and Brest tie at either surrogate (1/2 each); CITY's Paris and Lyon are no
    # NAME originals, so Paris is 1; zqxw 1 (zqxy no original); "," is not hidden.
    assert [found[w, "NAME"]["empirical"] for w in ("Rennes", "Brest", "Paris", "zqxw")] == [0.5, 0.5, 1.0, 1.0]
    assert found[",", "NAME"] is None
    assert success(report, "NAME", "mean", "empirical") == pytest.approx(3 / 4)
    assert report["overall"]["mean_success"]["empirical"] == pytest.approx((5 + 3) / 11)


def test_a_category_of_one_distinct_original_is_named_every_time(toy):
    report = reidentification_bound([("Rennes", "NAME")] * 3 + [("14", "DATE")] * 2 + [("0551234", "PHONE")], toy)
    for summary in [*report["categories"].values(), report["overall"]]:
        assert summary["mean_success"]["empirical"] == summary["worst_success"]["empirical"] == 1.0


def cold_caches(toy):
    toy.embeddings._kept.clear()
    bound._number_bayes.cache_clear()


def test_the_bound_is_the_same_from_cold_and_warm_caches(toy):
    tokens = [("Paris", "CITY"), ("nantes", "CITY"), ("Dijon", "CITY"), ("rome", "NAME"), ("00", "DATE"),
              ("14", "DATE"), ("123", "ID"), ("0551234", "PHONE")]
    cold_caches(toy)
    computed = reidentification_bound(tokens, toy)  # caches the frequencies in the empty cache folder
    cold_caches(toy)
    assert reidentification_bound(tokens, toy) == computed  # read back from disk
    assert reidentification_bound(tokens, toy) == computed  # from memory


def frequencies(pseudonymizer: Pseudonymizer, language: str = "en") -> list[float]:
    return bound._vocabulary_frequencies(pseudonymizer.embeddings, WORDS, language).tolist()


WORDS = ["paris", "lyon", "zqxw", "00", "2010"]


def test_cached_frequencies_are_wordfreqs_and_read_back_from_disk(toy, tmp_path):
    assert frequencies(toy) == [bound._Frequency("en")(word) for word in WORDS]
    [path] = (tmp_path / "neighbours").glob("*.npy")
    assert f"-wordfreq{version('wordfreq')}-en-" in path.name
    np.save(path, np.full(len(WORDS), 0.5))
    assert frequencies(toy) == [0.5] * len(WORDS)  # the file answers


def test_a_cache_file_of_other_words_language_wordfreq_version_or_embeddings_is_not_read(toy, tmp_path, monkeypatch):
    frequencies(toy)
    [path] = (tmp_path / "neighbours").glob("*.npy")
    np.save(path, np.full(len(WORDS), 0.5))
    wordfreq = [bound._Frequency("en")(word) for word in WORDS]
    assert frequencies(toy, "fr") == [bound._Frequency("fr")(word) for word in WORDS]
    assert bound._vocabulary_frequencies(toy.embeddings, WORDS[::-1], "en").tolist() == wordfreq[::-1]
    assert frequencies(circle({**ANGLES, "paris": 1})) == wordfreq
    assert frequencies(circle(ANGLES)) == [0.5] * len(WORDS)  # the same vectors: the same embeddings
    monkeypatch.setattr(bound, "version", lambda package: "0.0")
    assert frequencies(toy) == wordfreq


def test_replaceable_rows_belong_to_their_embeddings(toy):
    token_success([("paris", "CITY")], toy)
    # The same circle with the punctuation "--" for "nantes": "--" stays itself, so that
    # R(lyon) = {lyon, paris} and paris succeeds (1/2 + 1/2) / 2 (5/12 on the toy).
    other = circle({("--" if word == "nantes" else word): angle for word, angle in ANGLES.items()})
    assert token_success([("paris", "CITY")], other)["paris", "CITY"]["uniform"] == pytest.approx(1 / 2)
    assert token_success([("paris", "CITY")], toy)["paris", "CITY"]["uniform"] == pytest.approx(5 / 12)


def test_the_frequency_prior_is_that_of_the_language_asked_for(toy):
    # R(rennes) = {rennes, brest}; wordfreq: brest > rennes in English, rennes > brest in French.
    assert token_success([("rennes", "NAME")], toy)["rennes", "NAME"]["frequency"] == 0.0
    assert token_success([("rennes", "NAME")], toy, language="fr")["rennes", "NAME"]["frequency"] == 1.0


def test_under_the_groups_scheme_a_word_is_one_of_its_group_and_a_number_one_of_its_block():
    """Groups of N = 2: the best attacker names a word one time in two under the uniform prior,
    and under the frequency prior always for the most frequent word of its group (ties split),
    never for the others; a day of 13..31 one time in 19."""
    words = {name: angle for name, angle in ANGLES.items() if name not in ("dijon", "and", "2010")}
    kv = KeyedVectors(2)
    radians = np.radians(list(words.values()))
    kv.add_vectors(list(words), np.stack([np.cos(radians), np.sin(radians)], axis=1).astype(np.float32))
    pseudonymizer = Pseudonymizer(Embeddings(kv, "toy-groups"), 2, scheme="groups")
    tokens = [(word, "CITY") for word in words] + [("14", "DATE")]
    found = token_success(tokens, pseudonymizer)
    for word in words:
        group = pseudonymizer.candidates(word)
        assert len(group) in (2, 3) and found[word, "CITY"]["uniform"] == pytest.approx(1 / len(group))
        frequencies = [bound._Frequency("en")(other) for other in group]
        best = max(frequencies)
        expected = 1 / frequencies.count(best) if bound._Frequency("en")(word) == best else 0.0
        assert found[word, "CITY"]["frequency"] == pytest.approx(expected)
        # each word once: its group's words tie (all in the export, of one casing)
        assert found[word, "CITY"]["empirical"] == pytest.approx(1 / len(group))
    assert found["14", "DATE"]["uniform"] == pytest.approx(1 / 19)
