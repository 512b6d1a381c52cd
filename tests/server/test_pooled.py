"""Tests of the pooled data (streamed decryption, per-institution validation split, errors) and
of the pooled tagger's training run."""

import dataclasses
import json
import shutil

import numpy as np
import pytest

from deidpool.contribution.container import write_contribution
from deidpool.contribution.records import encode_sentence
from deidpool.representer.dataset import SentenceData
from deidpool.server.pooled import PooledContribution, PooledDataError, open_pooled_data, train_pooled

from ..conftest import REPR_SIZE
from ..conftest import TAGS as BUNDLE_TAGS
from ..contribution.conftest import resigned
from .conftest import upload


def contribute(pool, folder, institution, sentences, name=None, **options) -> PooledContribution:
    path = folder / f"{name or institution}.dpc"
    pool.write(path, institution, sentences, **options)
    return PooledContribution(path.stem, path, institution, pool.institution_keys[institution].public_key())


def in_memory(stream) -> SentenceData:
    """Every sentence of `stream`, shard after shard, in memory (as the pooled data was before streaming)."""
    return SentenceData.from_arrays(*zip(*(sentence for shard in stream.shards for sentence in shard())))


def numbers(stream) -> list[int]:
    """The sentence numbers of `stream` (first vector component of each sentence's first token)."""
    data = in_memory(stream)
    starts = np.concatenate([[0], np.cumsum(data.lengths)[:-1]])
    return [int(data.features[start, 0]) for start in starts]


@pytest.fixture(scope="module")
def contributions(pool, tmp_path_factory):
    """site-a: sentences 0-19 and 20-29 in two contributions; site-b: sentences 100-109."""
    folder = tmp_path_factory.mktemp("contributions")
    return [contribute(pool, folder, "site-a", pool.sentences(0, 20), "a1"),
            contribute(pool, folder, "site-b", pool.sentences(100, 10)),
            contribute(pool, folder, "site-a", pool.sentences(20, 10), "a2")]


def load(pool, contributions, **options):
    return open_pooled_data(contributions, pool.server_key, **{"representer_id": pool.representer,
                                                               "num_tags": len(pool.tags), "valid_fraction": 0.2,
                                                               **options})


def test_each_institution_gives_its_fraction_of_sentences_to_validation(pool, contributions):
    data = load(pool, contributions, seed=1)
    assert data.split == {"site-a": {"train": 24, "valid": 6}, "site-b": {"train": 8, "valid": 2}}
    train, valid = numbers(data.train), numbers(data.valid)
    assert sorted(train + valid) == [*range(30), *range(100, 110)]
    assert sum(n < 100 for n in valid) == 6 and sum(n >= 100 for n in valid) == 2
    expected = {number: sentence for number, sentence in enumerate(pool.sentences(0, 20) + pool.sentences(20, 10))}
    first, valid_data = expected[valid[0]], in_memory(data.valid)
    np.testing.assert_allclose(valid_data.features[:len(first[1])], first[0], atol=1e-2)  # float16 vectors
    np.testing.assert_array_equal(valid_data.tags[:len(first[1])], first[1])
    np.testing.assert_array_equal(valid_data.casing[:len(first[1])], first[2])
    np.testing.assert_array_equal(data.tag_counts, in_memory(data.train).tag_counts(len(pool.tags)))
    assert (len(data.train), len(data.valid), data.train.dim) == (32, 8, pool.dim)
    assert numbers(load(pool, contributions, seed=1).valid) == valid
    assert numbers(load(pool, contributions, seed=2).valid) != valid


def test_the_draws_of_a_sentence_are_held_out_together(pool, contributions, tmp_path):
    """site-b's second contribution holds each of 10 sentences twice, one copy after the other:
    site-b's 20 sentences of notes (10 + 10) give 4 to validation, both copies of each held-out
    copied one, and no copy of a held-out sentence trains."""
    twice = contribute(pool, tmp_path, "site-b", [copy for sentence in pool.sentences(300, 10)
                                                  for copy in (sentence, sentence)], "b2", draws=2)
    data = load(pool, [*contributions, twice], seed=3)
    assert data.split["site-a"] == load(pool, contributions, seed=3).split["site-a"]
    valid = numbers(data.valid)
    single, held = [n for n in valid if 100 <= n < 300], [n for n in valid if n >= 300]
    trained = [number for number in numbers(data.train) if number >= 300]
    assert len(single) + len(set(held)) == 4 and held and sorted(held) == sorted(2 * list(set(held)))
    assert data.split["site-b"] == {"train": 30 - len(single) - len(held), "valid": len(single) + len(held)}
    assert not set(held) & set(trained) and sorted(held + trained) == sorted(2 * list(range(300, 310)))


def test_an_institution_keeps_a_training_sentence(pool, contributions, tmp_path):
    single = contribute(pool, tmp_path, "site-b", pool.sentences(200, 1))
    data = load(pool, [contributions[0], single], valid_fraction=0.99)
    assert data.split == {"site-a": {"train": 1, "valid": 19}, "site-b": {"train": 1, "valid": 0}}


@pytest.mark.parametrize("fraction", [0.0, 1.0])
def test_the_validation_fraction_must_be_a_proper_fraction(pool, contributions, fraction):
    with pytest.raises(PooledDataError, match="valid_fraction"):
        load(pool, contributions, valid_fraction=fraction)


def test_no_data_is_a_clear_error(pool, contributions, tmp_path):
    with pytest.raises(PooledDataError, match="no contributions for representer rep-test"):
        load(pool, [])
    with pytest.raises(PooledDataError, match="no validation sentence"):
        load(pool, [contribute(pool, tmp_path, "site-a", pool.sentences(0, 2))])


def test_contributions_that_do_not_belong_are_refused(pool, contributions, tmp_path):
    forged = PooledContribution("forged", contributions[1].path, "site-b", pool.institution_keys["site-a"].public_key())
    with pytest.raises(PooledDataError, match="contribution forged: .*signature"):
        load(pool, [forged])
    other = contribute(pool, tmp_path, "site-a", pool.sentences(0, 5), representer_id="rep-other")
    with pytest.raises(PooledDataError, match="for rep-other, not from site-a for rep-test"):
        load(pool, [contributions[0], other])
    with pytest.raises(PooledDataError, match="outside the tag vocabulary of 1 tags"):
        load(pool, contributions, num_tags=1)


def test_a_stored_contribution_of_format_version_3_is_refused_naming_it_and_the_field(pool, contributions, tmp_path):
    """Stored before format version 4 (its header held the re-identification bound): a run over it
    fails naming the contribution, the file and format_version (docs/server.md: quarantine it)."""
    old = tmp_path / "old.dpc"
    old.write_bytes(resigned(contributions[1].path.read_bytes(), pool.institution_keys["site-b"], format_version=3,
                             reidentification_bound={"overall": {}}))
    stored = dataclasses.replace(contributions[1], sha256="old", path=old)
    with pytest.raises(PooledDataError, match="contribution old: .*old.dpc: the header's format_version is 3, but only "
                                              "format_version 4 is read"):
        load(pool, [contributions[0], stored])


def test_uploads_and_pooled_training_refuse_a_tag_out_of_range_with_the_same_check(api, site, tmp_path):
    """A contribution whose sentence 5 has a tag id outside the representer's tag vocabulary: the
    upload and the pooled data refuse it with the message of the one `check_sentence`."""
    rng, num_tags = np.random.default_rng(0), len(BUNDLE_TAGS)
    sentences = [(rng.normal(size=(4, REPR_SIZE)), rng.integers(0, num_tags, 4), rng.integers(0, 5, 4))
                 for _ in range(8)]
    sentences[4][1][2] = num_tags
    path = tmp_path / "a.dpc"
    write_contribution(path, [encode_sentence(*sentence) for sentence in sentences], institution="site-a",
                       representer_id=site.representer, dim=REPR_SIZE, neighbours=100, pseudonymization="groups",
                       signing_key=site.key, server_key=site.server_key)
    message = f"sentence 5 has a tag id >= {num_tags}, outside the tag vocabulary of {num_tags} tags"
    reply = upload(api, path.read_bytes(), site.key)
    assert reply.status_code == 422 and reply.json()["detail"] == f"the upload: {message}"
    with pytest.raises(PooledDataError) as refusal:
        open_pooled_data([PooledContribution("a", path, "site-a", site.key.public_key())],
                         api.app.state.server.encryption_key, representer_id=site.representer, num_tags=num_tags,
                         valid_fraction=0.5)
    assert str(refusal.value) == f"contribution a: {path}: {message}"


def test_training_reports_each_epoch_and_describes_the_run(pool, contributions, tmp_path):
    data = load(pool, contributions)
    records = []
    metrics = train_pooled(data, tmp_path, tags=pool.tags, representer_id=pool.representer,
                           contributions=[c.sha256 for c in contributions], max_epochs=2, patience=2, lstm_units=4,
                           on_epoch=records.append)
    assert [record["epoch"] for record in records] == [1, 2]
    assert all(np.isfinite(record["val_loss"]) and 0 <= record["val_f1"] <= 1 for record in records)
    assert records == json.loads((tmp_path / "history.json").read_text())
    assert metrics["epochs"] == 2 and metrics["best_epoch"] in (1, 2)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["tags"] == pool.tags and config["representer_id"] == pool.representer
    assert config["contributions"] == ["a1", "a2", "site-b"] and config["split"] == data.split
    assert config["tagger"]["lstm_units"] == 4 and (tmp_path / "models" / "tagger.keras").is_file()


def test_streamed_training_matches_in_memory_training(pool, tmp_path):
    """The same pool and seed, trained streamed and in memory (as before streaming): the split
    is the same, the batches' order differs, and the final validation PHI F1 agrees within
    0.03 and the validation loss within 10%."""
    def unnumbered(first, count):
        sentences = pool.sentences(first, count)
        for vectors, _, _ in sentences:
            vectors[:, 0] = 0  # the sentence numbers would drown the PHI feature
        return sentences

    contributions = [contribute(pool, tmp_path, "site-a", unnumbered(0, 300), "a1"),
                     contribute(pool, tmp_path, "site-b", unnumbered(1000, 200)),
                     contribute(pool, tmp_path, "site-a", unnumbered(2000, 100), "a2")]
    data = load(pool, contributions)
    memory = dataclasses.replace(data, train=in_memory(data.train), valid=in_memory(data.valid))

    def train(data, folder):
        return train_pooled(data, tmp_path / folder, tags=pool.tags, representer_id=pool.representer,
                            contributions=[c.sha256 for c in contributions], max_epochs=10, patience=10, lstm_units=8)

    streamed, before = train(data, "streamed"), train(memory, "memory")
    assert streamed["epochs"] == before["epochs"] == 10 and streamed["val_f1"] > 0.8
    assert streamed["val_f1"] == pytest.approx(before["val_f1"], abs=0.03)
    assert streamed["val_loss"] == pytest.approx(before["val_loss"], rel=0.1)


def test_a_contribution_failing_during_training_is_named(pool, contributions, tmp_path):
    copies = [dataclasses.replace(c, path=tmp_path / c.path.name) for c in contributions]
    for original, copy in zip(contributions, copies):
        shutil.copy(original.path, copy.path)
    data = load(pool, copies)
    shutil.copy(copies[1].path, copies[0].path)  # a1 replaced by site-b's file after the first pass
    with pytest.raises(PooledDataError, match="contribution a1: .*signature"):
        train_pooled(data, tmp_path / "run", tags=pool.tags, representer_id=pool.representer,
                     contributions=[c.sha256 for c in copies], max_epochs=1, patience=1, lstm_units=4)
