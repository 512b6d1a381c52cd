"""On all of the reference corpora (../shared/data; skipped when absent), the export's
pseudonymizer (GloVe, N = 100 as `client export` uses, every scheme; `deidpool pseudonymize`
draws the same way) keeps no alphanumeric gold PHI token as it is: under the embedding schemes
each has candidates other than itself, and a draw gives the original back no more often than
chance; under "surrogates" (in the corpus's language) no draw gives it back but the function words a
span keeps (`kept_words`: "de", "la", "of") and, by chance, a word naming a kind of place, drawn
whatever the original was (`PLACE_WORDS`: "Hospital", "Calle"), counted; no span comes out whole
as it went in."""

import random
from collections import Counter

import pytest

from deidpool.corpus.formats import read_corpus
from deidpool.corpus.prepare import prepare_document
from deidpool.pseudonymization.pseudonymize import Pseudonymizer, tag_category
from deidpool.pseudonymization.surrogates import PLACE_WORDS, kept_words, phi_spans
from deidpool.representer.embeddings import Embeddings, load_embeddings

NEIGHBOURS = 100  # client.export.DEFAULT_NEIGHBOURS (not imported: client.export loads TensorFlow)
# at most, under "surrogates" (of 2,047 and 38,954): on MEDDOCAN the function words ("de" 983, ...), and
# the place words drawn equal by chance
KEPT_WORDS = {"physionet": 0, "meddocan": 1500}
PLACE_WORDS_BY_CHANCE = {"physionet": 60, "meddocan": 800}


@pytest.fixture(scope="module")
def pseudonymizers() -> dict[str, Pseudonymizer]:
    """Both schemes on GloVe; "neighbours" searches the 20,000 most frequent words, not 100,000,
    to stay within seconds (which rows are searched does not decide whether a word has others)."""
    glove = load_embeddings("glove")
    return {"groups": Pseudonymizer(glove, NEIGHBOURS, "groups"),
            "neighbours": Pseudonymizer(Embeddings(glove.kv, glove.name, neighbour_vocab=20_000), NEIGHBOURS)}


def documents(corpus: str, request) -> list:
    """All of PhysioNet; MEDDOCAN train and dev."""
    folder = request.getfixturevalue(f"{corpus}_dir")
    if corpus == "physionet":
        return read_corpus(folder, "physionet")
    return [document for part in ("train", "dev") for document in read_corpus(folder / part / "xml", "meddocan")]


@pytest.mark.filterwarnings("ignore::corpus.errors.CorpusWarning")
@pytest.mark.parametrize("corpus", ["physionet", "meddocan"])
def test_no_alphanumeric_gold_phi_token_is_kept(corpus, pseudonymizers, request):
    sentences = [sentence for document in documents(corpus, request) for sentence in prepare_document(document)]
    phi = [(i, j) for i, sentence in enumerate(sentences) for j, (token, tag) in
           enumerate(zip(sentence.tokens, sentence.tags)) if tag != "O" and any(c.isalnum() for c in token.text)]
    language = "es" if corpus == "meddocan" else "en"
    surrogates = Pseudonymizer(pseudonymizers["groups"].embeddings, NEIGHBOURS, "surrogates", language=language)
    drawn = surrogates.labeled_sentences(sentences, random.Random(0))
    same = Counter(drawn[i].tokens[j].text for i, j in phi
                   if drawn[i].tokens[j].text.lower() == sentences[i].tokens[j].text.lower())
    whole = [[token.text for token in sentences[i].tokens[span.start:span.stop]]
             for i, sentence in enumerate(sentences) for span in phi_spans(sentence.tags)
             if [t.text.lower() for t in drawn[i].tokens[span.start:span.stop]]
             == [t.text.lower() for t in sentence.tokens[span.start:span.stop]]]
    print(f"{corpus}, surrogates: {same.total()} of {len(phi)} alphanumeric PHI tokens exported as they are, "
          f"all words a span keeps: {dict(same.most_common())}; whole spans: {len(whole)}")
    places = frozenset().union(*PLACE_WORDS[language].values())
    chance = Counter({word: n for word, n in same.items() if word.casefold() in places - kept_words(language)})
    print(f"of which place words drawn equal by chance: {chance.total()} {dict(chance.most_common(10))}")
    assert {word.casefold() for word in same - chance} <= kept_words(language), same - chance
    assert (same - chance).total() <= KEPT_WORDS[corpus] and chance.total() <= PLACE_WORDS_BY_CHANCE[corpus]
    assert not whole, whole[:10]
    for scheme, pseudonymizer in pseudonymizers.items():
        drawn = pseudonymizer.labeled_sentences(sentences, random.Random(0))  # as `client export` draws
        kept, same, chance = Counter(), 0, 0.0
        for i, j in phi:
            word, category = sentences[i].tokens[j].text, tag_category(sentences[i].tags[j])
            candidates = pseudonymizer.candidates(word, category)
            kept[word] += len(candidates) < 2
            same += drawn[i].tokens[j].text == word
            chance += (word.lower() in candidates or word in candidates) / len(candidates)
        print(f"{corpus}, {scheme}: {kept.total()} of {len(phi)} alphanumeric PHI tokens kept as they are; "
              f"{same} drawn as themselves (chance {chance:.1f})")
        assert not +kept, (+kept).most_common(10)
        assert same <= 2 * chance + 10
