from deidpool.baselines import crf, svm
from deidpool.baselines.features import SectionHeadings, enclosing_word, in_window, orthographic_features, word_shape
from deidpool.corpus.prepare import prepare_text


def test_orthographic_features_are_those_of_cegs_table_2_for_vincent():
    features = orthographic_features("Vincent")
    assert {name: features[name] for name in ("lower", "shape", "length", "casing")} == {
        "lower": "vincent", "shape": "Aaaaaaa", "length": "7", "casing": "initial_upper"}
    assert {name for name, value in features.items() if value is True} == {"has_letter", "has_upper", "init_upper"}
    assert [features[f"{side}{n}"] for n in (2, 3, 4) for side in ("prefix", "suffix")] == [
        "Vi", "nt", "Vin", "ent", "Vinc", "cent"]


def test_digit_and_punctuation_indicators_and_short_tokens():
    year = orthographic_features("2067")
    assert year["has_digit"] and year["all_digit"] and "has_letter" not in year and year["shape"] == "0000"
    slash = orthographic_features("/")
    assert slash["has_punct"] and "prefix2" not in slash and "suffix2" not in slash
    assert orthographic_features("AB")["all_upper"] and orthographic_features("a1")["letters_and_digits"]
    assert orthographic_features("1/2")["digits_and_punct"]
    assert word_shape("Mc-Donald's 2") == "Aa-Aaaaaa'a 0"


def test_window_features_name_neighbours_by_offset_and_mark_the_sentence_ends():
    window = in_window([{"lower": w} for w in ("seen", "by", "dr", "smith")], 2)
    assert window[0] == {"lower": "seen", "BOS": True, "+1:lower": "by", "+2:lower": "dr"}
    assert window[2] == {"lower": "dr", "-2:lower": "seen", "-1:lower": "by", "+1:lower": "smith", "EOS": True}
    assert "BOS" not in window[2] and "-2:lower" not in window[1]


def test_crf_features_cover_a_window_of_two_tokens():
    sentence = prepare_text("Seen by Dr. Smith today.")[0]
    features = crf.sentence_features(sentence)
    smith = [t.text for t in sentence.tokens].index("Smith")
    assert features[smith]["-2:lower"] == "dr" and features[smith]["-1:lower"] == "."
    assert features[smith]["+1:lower"] == "today" and features[smith]["+2:shape"] == "."
    assert features[smith]["-2:suffix2"] == "Dr" and features[smith]["prefix3"] == "Smi"


def test_section_headings_and_enclosing_words():
    text = "HISTORY OF PRESENT ILLNESS: fell on 09/14/2067.\nNeuro: alert\nplan none"
    headings = SectionHeadings(text)
    assert headings.at(0) == "history of present illness"
    assert headings.at(text.index("2067")) == "history of present illness"
    assert headings.at(text.index("alert")) == headings.at(text.index("plan")) == "neuro"
    assert SectionHeadings("no heading here").at(5) == "<none>"
    token = next(t for t in prepare_text(text)[0].tokens if t.text == "14")
    assert enclosing_word(text, token) == "09/14/2067."


def test_svm_features_are_sibandas_local_context():
    text = "Social: lives with wife Mary in Boston-area home"
    sentence = prepare_text(text)[0]
    features = svm.sentence_features(text, SectionHeadings(text), sentence)
    words = [t.text for t in sentence.tokens]
    mary = features[words.index("Mary")]
    assert {k: mary[k] for k in ("lower", "before", "after", "bigram_before", "bigram_after", "casing", "length",
                                 "heading", "hyphen_or_slash")} == {
        "lower": "mary", "before": "wife", "after": "in", "bigram_before": "with wife", "bigram_after": "in boston",
        "casing": "initial_upper", "length": "4", "heading": "social", "hyphen_or_slash": False}
    assert features[words.index("Boston")]["hyphen_or_slash"] is True
    assert features[0]["before"] == "<s>" and features[0]["bigram_before"] == "<s> <s>"
    assert features[-1]["bigram_after"] == "<s> <s>"
