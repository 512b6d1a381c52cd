"""Tests of representer.embeddings: lookup policy, neighbours, source ids, loaders."""

import numpy as np
import pytest
from gensim.models import KeyedVectors

from deidpool.corpus.tokenize import Token, tokenize
from deidpool.representer.embeddings import (
    Embeddings,
    load_embeddings,
    load_fasttext_bin,
    load_word2vec_text,
    save_fasttext,
    train_fasttext,
)

WORDS = ["the", "Paris", "paris", "monday", "tuesday", "0000", "00", "2067", "x0"]


def tiny(words=WORDS, dim=8, seed=0, **options) -> Embeddings:
    kv = KeyedVectors(dim)
    kv.add_vectors(words, np.random.default_rng(seed).normal(size=(len(words), dim)).astype(np.float32))
    return Embeddings(kv, "tiny", **options)


def test_lookup_policy_exact_then_lower_then_digit_shape():
    emb = tiny()
    rows = emb.kv.key_to_index
    assert not emb.lowercase
    ids = emb.lookup_ids(["Paris", "PARIS", "Monday", "2067", "1999", "12", "123", "X0", "x7", "nowhere"])
    expected = [rows["Paris"], rows["paris"], rows["monday"], rows["2067"], rows["0000"], rows["00"], -1,
                rows["x0"], rows["x0"], -1]
    assert ids.tolist() == expected


def test_lowercase_vocabulary_is_detected_and_skips_exact_lookup():
    emb = tiny(["the", "monday"])
    assert emb.lowercase
    assert emb.lookup_ids(["MONDAY", "The"]).tolist() == [1, 0]


def test_sentence_matrix_known_rows_and_zero_oov():
    emb = tiny()
    tokens = [Token("Monday", 0, 6), "nowhere", "1999"]
    matrix = emb.sentence_matrix(tokens)
    assert matrix.shape == (3, 8) and matrix.dtype == np.float32
    np.testing.assert_array_equal(matrix[0], emb.kv["monday"])
    np.testing.assert_array_equal(matrix[1], 0)
    np.testing.assert_array_equal(matrix[2], emb.kv["0000"])
    assert emb.sentence_matrix([]).shape == (0, 8)
    assert emb.is_known(tokens[0]) and not emb.is_known("nowhere")
    assert emb.oov_rate(tokens) == pytest.approx(1 / 3)
    assert emb.oov_rate([]) == 0.0


def brute_force(emb: Embeddings, word: str, n: int) -> list[str]:
    vectors = emb.kv.vectors / np.linalg.norm(emb.kv.vectors, axis=1, keepdims=True)
    query = emb.kv[word] / np.linalg.norm(emb.kv[word])
    order = np.argsort(-(vectors @ query))
    return [word, *[emb.kv.index_to_key[i] for i in order if emb.kv.index_to_key[i] != word][: n - 1]]


def test_neighbours_word_first_then_cosine_order():
    words = [f"w{i}" for i in range(300)]
    emb = tiny(words, dim=16)
    for word in ["w0", "w17", "w299"]:
        for n in [1, 2, 5, 300]:
            assert emb.neighbours(word, n) == brute_force(emb, word, n)
    assert emb.neighbours("w17", 5) == emb.neighbours("w17", 5)


def test_neighbours_of_cased_and_oov_words():
    emb = tiny()
    assert emb.neighbours("Monday", 4)[0] == "Monday"
    assert "monday" not in emb.neighbours("Monday", 4)
    assert emb.neighbours("nowhere", 5) == ["nowhere"]


def test_neighbour_search_restricted_to_most_frequent_rows():
    words = [f"w{i}" for i in range(50)]
    emb = tiny(words, neighbour_vocab=10)
    found = emb.neighbours("w40", 8)
    assert found[0] == "w40" and len(found) == 8
    assert all(int(word[1:]) < 10 for word in found[1:])


def test_source_id_stable_and_sensitive():
    first, again = tiny(), tiny()
    assert first.source_id == again.source_id
    assert first.source_id.startswith("tiny:") and len(first.source_id) == len("tiny:") + 64
    changed = tiny()
    changed.kv.vectors[3, 2] += 1e-3
    assert "source_id" not in vars(changed)  # hashed lazily, after the change
    assert changed.source_id != first.source_id
    assert Embeddings(first.kv, "other").source_id != first.source_id


@pytest.fixture(scope="module")
def glove() -> Embeddings:
    return load_embeddings("glove")  # the one GloVe load of the module


def test_glove_default(glove):
    assert glove.name == "glove-6b-50d" and glove.dim == 50 and glove.lowercase
    assert isinstance(glove.kv.vectors, np.memmap)
    assert glove.kv.key_to_index["the"] == 0 and glove.is_known("Patient")
    assert glove.oov_rate(tokenize("The patient is 25yo, seen Monday.")) == 0.0
    nearest = glove.neighbours("monday", 5)
    assert nearest[0] == "monday" and {"tuesday", "wednesday", "thursday", "friday"} & set(nearest[1:])
    assert glove.is_known("2008")
    assert glove.source_id.startswith("glove-6b-50d:")


SENTENCES = [f"the patient was seen on {day} by doctor {name} for {issue}".split()
             for day in ["monday", "tuesday", "friday"]
             for name in ["smith", "jones", "garcia", "lopez"]
             for issue in ["pain", "fever", "cough", "nausea"]]


def test_fasttext_embeds_unseen_words_and_round_trips(tmp_path):
    model = train_fasttext(SENTENCES, dim=16, epochs=3, min_count=1, bucket=2000)
    emb = Embeddings(model.wv, "fasttext-tiny")
    assert emb.is_known("patient") and not emb.is_known("patients")
    assert emb.oov_rate(["patient", "patients"]) == 0.5
    assert np.linalg.norm(emb.vector("patients")) > 0
    path = tmp_path / "tiny.bin"
    save_fasttext(model, path)
    loaded = load_embeddings(f"fasttext:{path}")
    assert loaded.name == "tiny"
    np.testing.assert_allclose(loaded.sentence_matrix(["patient", "patients"]),
                               emb.sentence_matrix(["patient", "patients"]), rtol=1e-5, atol=1e-6)
    assert loaded.source_id.split(":")[1] == emb.source_id.split(":")[1]
    assert load_fasttext_bin(path).neighbours("monday", 3)[0] == "monday"


def test_under_fasttext_an_unknown_phi_word_is_pseudonymized_among_vocabulary_words():
    """Its subword vector would spell it out to the representer: it is replaced like any word."""
    from deidpool.pseudonymization.pseudonymize import Pseudonymizer

    emb = Embeddings(train_fasttext(SENTENCES, dim=16, epochs=3, min_count=1, bucket=2000).wv, "fasttext-tiny")
    pseudonymizer = Pseudonymizer(emb, 4)
    assert emb.embeds_unknown_words and not emb.is_known("smithson") and pseudonymizer.replaceable("smithson")
    candidates = pseudonymizer.candidates("smithson", "PATIENT")
    assert candidates[0] == "smithson" and len(candidates) == 4 and all(emb.is_known(w) for w in candidates[1:])


def test_word2vec_and_glove_text_round_trip(tmp_path):
    emb = tiny()
    word2vec = tmp_path / "vectors.w2v.txt"
    emb.kv.save_word2vec_format(str(word2vec))
    glove_text = tmp_path / "vectors.glove.txt"
    glove_text.write_text("".join(f"{word} {' '.join(map(repr, emb.kv[word].tolist()))}\n" for word in WORDS),
                          encoding="utf-8")
    for loaded in [load_word2vec_text(word2vec), load_embeddings(f"word2vec:{word2vec}"),
                   load_embeddings(f"glove-text:{glove_text}")]:
        assert loaded.kv.index_to_key == WORDS
        np.testing.assert_array_equal(loaded.kv.vectors, emb.kv.vectors)
        assert loaded.source_id.split(":")[1] == emb.source_id.split(":")[1]


@pytest.mark.parametrize("spec", ["nope", "fasttext:", "glove:x", "word2vec"])
def test_bad_spec(spec):
    with pytest.raises(ValueError, match="bad embeddings spec"):
        load_embeddings(spec)


def test_missing_or_malformed_file(tmp_path):
    with pytest.raises(ValueError, match="missing.bin does not exist"):
        load_embeddings(f"fasttext:{tmp_path / 'missing.bin'}")
    malformed = tmp_path / "bad.txt"
    malformed.write_text("a b c\nd e\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.txt is not a word2vec or GloVe text file"):
        load_embeddings(f"glove-text:{malformed}")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("DEIDPOOL_CACHE", str(tmp_path))
    return tmp_path / "neighbours"


@pytest.mark.parametrize("n", [1, 2, 7, 40])
def test_neighbour_table_matches_neighbours(cache_dir, monkeypatch, n):
    monkeypatch.setattr("deidpool.representer.embeddings._SIMILARITY_CELLS", 100)  # chunks of 3 rows
    words = [f"w{i}" for i in range(40)]
    emb = tiny(words, dim=6, neighbour_vocab=30)
    table = emb.neighbour_table(n)
    assert table.dtype == np.int32 and table.shape == (30, min(n, 30))
    for row in range(30):
        assert [words[i] for i in table[row]] == emb.neighbours(words[row], n)


def test_neighbour_table_zero_vector_has_no_neighbours(cache_dir):
    emb = tiny([f"w{i}" for i in range(6)])
    emb.kv.vectors[2] = 0
    table = emb.neighbour_table(3)
    assert table[2].tolist() == [2, -1, -1] and emb.neighbours("w2", 3) == ["w2"]
    assert (table[[0, 1, 3, 4, 5], 1:] >= 0).all()
    with pytest.raises(ValueError, match="n must be >= 1"):
        emb.neighbour_table(0)


def test_neighbour_table_cached_on_disk(cache_dir, monkeypatch):
    words = [f"w{i}" for i in range(20)]
    table = tiny(words).neighbour_table(4)
    assert [path.suffix for path in cache_dir.iterdir()] == [".npy"]

    def recompute(*args):
        raise AssertionError("recomputed a cached table")

    monkeypatch.setattr(Embeddings, "_neighbour_table", recompute)
    np.testing.assert_array_equal(tiny(words).neighbour_table(4), table)  # a fresh load of the same vectors
    for other in [lambda: tiny(words).neighbour_table(5), lambda: tiny(words, seed=1).neighbour_table(4),
                  lambda: tiny(words, neighbour_vocab=10).neighbour_table(4)]:
        with pytest.raises(AssertionError, match="recomputed"):
            other()


@pytest.mark.parametrize("n", [1, 3, 7])
def test_neighbour_groups_partition_the_eligible_rows_into_groups_of_n_to_2n_1(cache_dir, n):
    words = [f"w{i}" for i in range(40)]
    emb = tiny(words, dim=6, neighbour_vocab=30)
    emb.kv.vectors[5] = 0
    eligible = np.ones(30, dtype=bool)
    eligible[[0, 9]] = False
    groups = emb.neighbour_groups(n, eligible, progress=False)
    assert groups.dtype == np.int32 and groups.shape == (30,) and (groups[[0, 5, 9]] == -1).all()
    sizes = np.bincount(groups[groups >= 0])
    assert sizes.sum() == 27 and (sizes >= n).all() and (sizes < 2 * n).all()
    with pytest.raises(ValueError, match="each of the 30 rows"):
        emb.neighbour_groups(n, eligible[:-1])


def test_neighbour_groups_find_well_separated_clusters(cache_dir):
    """Four tight clusters of five words in different directions: each is a group of n = 5."""
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(4, 8))
    vectors = np.repeat(centres, 5, axis=0) + 0.05 * rng.normal(size=(20, 8))
    order = rng.permutation(20)
    kv = KeyedVectors(8)
    kv.add_vectors([f"c{i // 5}_{i % 5}" for i in order], vectors[order].astype(np.float32))
    emb = Embeddings(kv, "clusters")
    groups = emb.neighbour_groups(5, np.ones(20, dtype=bool), progress=False)
    by_group = {}
    for word, group in zip(kv.index_to_key, groups):
        by_group.setdefault(group, set()).add(word.split("_")[0])
    assert sorted(map(len, by_group.values())) == [1, 1, 1, 1] and len(by_group) == 4


def test_neighbour_groups_are_cached_per_embedding_n_and_eligible_rows(cache_dir, monkeypatch):
    emb = tiny([f"w{i}" for i in range(20)])
    everything = np.ones(20, dtype=bool)
    groups = emb.neighbour_groups(4, everything, progress=False)
    with monkeypatch.context() as patched:
        patched.setattr(Embeddings, "_neighbour_groups", lambda *args: pytest.fail("recomputed"))
        np.testing.assert_array_equal(emb.neighbour_groups(4, everything), groups)
    assert len(list(cache_dir.glob("*groups4*.npy"))) == 1
    fewer = everything.copy()
    fewer[3] = False
    assert emb.neighbour_groups(4, fewer, progress=False)[3] == -1
    other = tiny([f"w{i}" for i in range(20)], seed=1)
    assert other.neighbour_groups(4, everything, progress=False).shape == (20,)
    assert len(list(cache_dir.glob("*groups4*.npy"))) == 3


def test_cli_trains_fasttext_on_notes_that_a_tagger_then_reads(tmp_path):
    """`train embeddings` reads notes through the corpus readers and writes an owner-only `.bin` that
    `--embeddings fasttext:PATH` loads (a raw-text tagger trains on it in tests/client/test_stack.py)."""
    import os
    import stat

    from typer.testing import CliRunner

    from deidpool.cli import app
    from deidpool.corpus.formats import write_corpus
    from deidpool.corpus.synth import generate_documents

    write_corpus(generate_documents(12, seed=5), tmp_path / "notes", "i2b2")
    out = tmp_path / "site" / "fasttext.bin"
    runner = CliRunner()
    result = runner.invoke(app, ["train", "embeddings", "--data", str(tmp_path / "notes"), "--format", "i2b2",
                                 "--dim", "8", "--epochs", "2", "--min-count", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"fasttext:{out}" in result.output and stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert [path.name for path in out.parent.iterdir()] == ["fasttext.bin"]  # no part file left
    vectors = load_embeddings(f"fasttext:{out}")
    assert vectors.dim == 8 and vectors.is_known("patient") and vectors.embeds_unknown_words
    empty = runner.invoke(app, ["train", "embeddings", "--data", str(tmp_path / "notes"), "--format", "brat",
                                "--out", str(tmp_path / "x.bin")])
    assert empty.exit_code == 2 and "error:" in empty.output
