import itertools
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from deidpool.representer.crf import CRF, crf_nll

TAGS = 3
LENGTHS = [1, 4, 2, 3]


def random_crf(seed=0):
    rng = np.random.default_rng(seed)
    crf = CRF(TAGS)
    crf.build((None, None, TAGS))
    crf.transitions.assign(rng.normal(size=(TAGS, TAGS)))
    crf.start_transitions.assign(rng.normal(size=TAGS))
    crf.end_transitions.assign(rng.normal(size=TAGS))
    return crf


def random_batch(lengths, time, seed=1):
    """Unaries, tags and mask with random garbage (unaries and tags) in the padding."""
    rng = np.random.default_rng(seed)
    unaries = rng.normal(size=(len(lengths), time, TAGS)).astype("float32")
    tags = rng.integers(0, TAGS, size=(len(lengths), time)).astype("int32")
    mask = np.arange(time)[None] < np.array(lengths)[:, None]
    return unaries, tags, mask


def path_score(crf, unaries, path):
    trans, start, end = (w.numpy() for w in (crf.transitions, crf.start_transitions, crf.end_transitions))
    score = start[path[0]] + end[path[-1]] + sum(unaries[t, y] for t, y in enumerate(path))
    return score + sum(trans[a, b] for a, b in zip(path, path[1:]))


def test_matches_brute_force_enumeration():
    crf = random_crf()
    unaries, tags, mask = random_batch(LENGTHS, max(LENGTHS))
    partition = crf.log_partition(unaries, mask).numpy()
    gold = crf.sequence_score(unaries, tags, mask).numpy()
    paths, best = (x.numpy() for x in crf.decode(unaries, mask))
    for b, n in enumerate(LENGTHS):
        candidates = list(itertools.product(range(TAGS), repeat=n))
        scores = np.array([path_score(crf, unaries[b], p) for p in candidates])
        assert partition[b] == pytest.approx(np.logaddexp.reduce(scores), abs=1e-4)
        assert gold[b] == pytest.approx(path_score(crf, unaries[b], tags[b, :n]), abs=1e-4)
        assert list(paths[b, :n]) == list(candidates[scores.argmax()])
        assert best[b] == pytest.approx(scores.max(), abs=1e-4)
        assert not paths[b, n:].any()
    assert crf.log_likelihood(unaries, tags, mask).numpy() == pytest.approx(gold - partition, abs=1e-4)


def test_padding_garbage_changes_nothing():
    crf = random_crf()
    unaries, tags, mask = random_batch(LENGTHS, max(LENGTHS))
    longer_unaries, longer_tags, longer_mask = random_batch(LENGTHS, max(LENGTHS) + 3, seed=7)
    time = max(LENGTHS)
    longer_unaries[:, :time] = np.where(mask[..., None], unaries, longer_unaries[:, :time])
    longer_tags[:, :time] = np.where(mask, tags, longer_tags[:, :time])
    np.testing.assert_allclose(crf.log_likelihood(longer_unaries, longer_tags, longer_mask),
                               crf.log_likelihood(unaries, tags, mask), atol=1e-5)
    paths, best = crf.decode(unaries, mask)
    longer_paths, longer_best = crf.decode(longer_unaries, longer_mask)
    np.testing.assert_array_equal(longer_paths[:, :time], paths)
    assert not longer_paths.numpy()[:, time:].any()
    np.testing.assert_allclose(longer_best, best, atol=1e-5)


def test_graph_mode_with_varying_shapes_traces_once():
    crf = random_crf()
    spec = (tf.TensorSpec((None, None, TAGS)), tf.TensorSpec((None, None), tf.bool))
    decode = tf.function(crf.decode, input_signature=spec)
    partition = tf.function(crf.log_partition, input_signature=spec)
    for lengths in ([1], [2, 5, 3], LENGTHS):
        unaries, _, mask = random_batch(lengths, max(lengths))
        np.testing.assert_array_equal(decode(unaries, mask)[0], crf.decode(unaries, mask)[0])
        np.testing.assert_allclose(partition(unaries, mask), crf.log_partition(unaries, mask), atol=1e-5)
    assert decode.experimental_get_tracing_count() == partition.experimental_get_tracing_count() == 1


def test_gradients_reach_all_weights():
    crf = random_crf()
    unaries, tags, mask = random_batch(LENGTHS, max(LENGTHS))
    with tf.GradientTape() as tape:
        loss = crf_nll(crf, unaries, tags, mask, sample_weight=[1.0, 2.0, 0.5, 1.0])
    for grad in tape.gradient(loss, crf.trainable_weights):
        assert np.isfinite(grad).all() and np.abs(grad).sum() > 0


def test_learns_a_label_that_depends_only_on_the_previous_label():
    # The first token's unaries reveal its tag; every later tag is (previous + 1) % 3 with
    # uninformative unaries, so only the transitions can get it right.
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 7, size=32)
    first = rng.integers(0, TAGS, size=32)
    time = lengths.max()
    tags = ((first[:, None] + np.arange(time)[None]) % TAGS).astype("int32")
    mask = np.arange(time)[None] < lengths[:, None]
    unaries = np.zeros((32, time, TAGS), "float32")
    unaries[np.arange(32), 0, first] = 5.0
    crf = CRF(TAGS)
    crf.build((None, None, TAGS))
    optimizer = keras.optimizers.Adam(0.05)

    @tf.function
    def train_step():
        with tf.GradientTape() as tape:
            loss = crf_nll(crf, unaries, tags, mask)
        optimizer.apply_gradients(zip(tape.gradient(loss, crf.trainable_weights), crf.trainable_weights))
        return loss

    initial = float(train_step())
    for _ in range(200):
        final = float(train_step())
    paths = crf.decode(unaries, mask)[0].numpy()
    assert final < 0.1 * initial
    assert (paths[mask] == tags[mask]).mean() == 1.0


def test_model_with_crf_saves_and_loads_in_a_fresh_process(tmp_path):
    unaries_in = keras.Input((None, 5))
    mask_in = keras.Input((None,), dtype="bool")
    paths = CRF(TAGS)(keras.layers.Dense(TAGS)(unaries_in), mask=mask_in)
    model = keras.Model([unaries_in, mask_in], paths)
    features = np.random.default_rng(0).normal(size=(4, 6, 5)).astype("float32")
    mask = np.arange(6)[None] < np.array(LENGTHS)[:, None]
    np.save(tmp_path / "features.npy", features)
    np.save(tmp_path / "mask.npy", mask)
    model.save(tmp_path / "model.keras")
    script = (
        "import sys, keras, numpy as np; import deidpool.representer.crf; d = sys.argv[1]; "
        "model = keras.saving.load_model(d + '/model.keras'); "
        "np.save(d + '/paths.npy', model.predict([np.load(d + '/features.npy'), np.load(d + '/mask.npy')], verbose=0))"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, capture_output=True)
    expected = model.predict([features, mask], verbose=0)
    np.testing.assert_array_equal(np.load(tmp_path / "paths.npy"), expected)
    assert expected.dtype == np.int32 and not expected[~mask].any()
