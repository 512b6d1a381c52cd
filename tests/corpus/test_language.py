"""The notes' language, told from their words' frequencies: on synthetic and real notes of both
languages, and refused when the words cannot tell."""

import pytest

from deidpool.corpus.formats import read_corpus
from deidpool.corpus.language import detect_language
from deidpool.corpus.synth import generate_documents


def test_synthetic_english_notes_and_a_spanish_case_are_told_apart():
    assert detect_language(document.text for document in generate_documents(5, seed=0)) == "en"
    assert detect_language(["Paciente de 45 años que acude a urgencias por dolor abdominal de dos días de "
                            "evolución, sin fiebre ni vómitos."]) == "es"


@pytest.mark.parametrize("words", ["", "12 / 03 / 2019 ; 555-1234", "Hospital general, doctor, normal"])
def test_notes_that_cannot_tell_are_refused(words):
    with pytest.raises(ValueError, match="--language"):
        detect_language([words])


def test_the_reference_corpora_are_in_their_languages(physionet_dir, meddocan_dir):
    assert detect_language(document.text for document in read_corpus(physionet_dir, "physionet", split="test")) \
        == "en"
    assert detect_language(document.text for document in read_corpus(meddocan_dir / "dev" / "brat", "brat")) == "es"
