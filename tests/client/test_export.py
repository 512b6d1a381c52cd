"""Privacy properties of an exported contribution (no token strings, offsets or document ids;
sentences shuffled; fresh noise on every export; a header that the original PHI values do not
change, the bound sealed) and export failures leaving no file."""

import json
import os
from operator import attrgetter

import numpy as np
import pytest

from deidpool.client.export import ExportSettings, export_contribution
from deidpool.contribution.container import decrypt_payload, iter_sentences, read_summary, verify_contribution
from deidpool.contribution.records import record_size
from deidpool.contribution.validation import validate_contribution
from deidpool.corpus.document import Document, Span
from deidpool.corpus.errors import CorpusError
from deidpool.corpus.prepare import prepare_document
from deidpool.pseudonymization.bound import reidentification_bound
from deidpool.pseudonymization.pseudonymize import Pseudonymizer
from deidpool.pseudonymization.surrogates import PLACE_WORDS, kept_words

from ..conftest import REPR_SIZE, TAGS
from .conftest import every_phi_token_replaced


def _export(documents, pipeline, embeddings, loaded_keys, out, settings=ExportSettings(), **options):
    return export_contribution(documents, pipeline, embeddings, out, settings, institution="site-a",
                               signing_key=loaded_keys.institution, server_key=loaded_keys.server_public,
                               progress=False, **options)


@pytest.fixture(scope="module")
def exports(tmp_path_factory, documents, pipeline, embeddings, loaded_keys):
    folder = tmp_path_factory.mktemp("export")
    return [(folder / name, _export(documents, pipeline, embeddings, loaded_keys, folder / name).header)
            for name in ("first.dpc", "second.dpc")]


@pytest.fixture(scope="module")
def input_sentences(documents):
    """(tag ids, casing ids) of every sentence, in input order."""
    index = {tag: i for i, tag in enumerate(TAGS)}
    return [_key_of([index[tag] for tag in sentence.tags], sentence.casing)
            for document in documents for sentence in prepare_document(document, "BIO", attrgetter("source_type"))]


def _sentences(path, loaded_keys):
    return list(iter_sentences(path, loaded_keys.server, loaded_keys.institution_public))


def _payload(path, loaded_keys):
    return b"".join(decrypt_payload(path, loaded_keys.server, loaded_keys.institution_public))


def _key_of(tags, casing):
    """Tag ids and the casing ids of the non-PHI tokens (a PHI token's casing is its surrogate's,
    drawn afresh by every export)."""
    return tuple(int(tag) for tag in tags), tuple(-1 if tag else int(c) for tag, c in zip(tags, casing))


def _key(sentence):
    return _key_of(sentence.tags, sentence.casing)


def test_contribution_is_valid_for_the_server(exports, pipeline, loaded_keys, input_sentences):
    path, header = exports[0]
    assert validate_contribution(path, loaded_keys.server, loaded_keys.institution_public,
                                 representer_ids=[pipeline.representer_id], dim=REPR_SIZE,
                                 num_tags=len(TAGS)) == header
    assert (header.institution, header.sentences, header.dtype) == ("site-a", len(input_sentences), "float16")
    assert header.tokens == sum(len(tags) for tags, _ in input_sentences)


def test_payload_holds_no_token_string(exports, documents, loaded_keys):
    """No token of 3+ characters with a letter occurs anywhere in the decrypted bytes. (Digit-only
    tokens can occur by chance inside float16 vector bytes; the next test shows that the payload
    has no room for anything but vectors and small ids.) Letters cannot: every other byte of a
    float16 in [-1, 1] is a sign/exponent byte outside the ASCII letters."""
    payload = _payload(exports[0][0], loaded_keys)
    words = {token for document in documents for sentence in prepare_document(document)
             for token in (t.text for t in sentence.tokens) if len(token) >= 3 and not token.isdigit()}
    assert len(words) > 200
    found = [word for word in words if word.encode() in payload or word.lower().encode() in payload]
    assert found == []
    assert not any(document.id.encode() in payload or document.id.encode() in exports[0][0].read_bytes()
                   for document in documents)


def test_payload_is_nothing_but_sentence_records(exports, loaded_keys):
    """Its size is exactly that of the records (length, tag ids, casing ids, vectors): no text,
    offsets, document ids or per-document counts fit anywhere."""
    path = exports[0][0]
    sentences = _sentences(path, loaded_keys)
    assert len(_payload(path, loaded_keys)) == sum(record_size(len(s.tags), REPR_SIZE, "float16") for s in sentences)
    for sentence in sentences:
        np.testing.assert_allclose(np.linalg.norm(sentence.vectors.astype(np.float32), axis=1), 1, atol=2e-3)


def test_sentences_are_shuffled_across_documents(exports, loaded_keys, input_sentences):
    exported = [_key(sentence) for sentence in _sentences(exports[0][0], loaded_keys)]
    assert sorted(exported) == sorted(input_sentences)
    assert exported != input_sentences
    assert exported != [_key(sentence) for sentence in _sentences(exports[1][0], loaded_keys)]


def test_exporting_twice_gives_the_same_tags_but_other_vectors(exports, loaded_keys):
    first, second = ({_key(s): s.vectors for s in _sentences(path, loaded_keys)} for path, _ in exports)
    assert first.keys() == second.keys()
    assert not any(np.array_equal(first[key], second[key]) for key in first)


def test_an_export_without_noise_repeats_the_vectors_of_sentences_without_phi(tmp_path, documents, pipeline,
                                                                             embeddings, loaded_keys):
    """The ablation of `noise=False`: only the pseudonymization varies between two exports. (Sentences
    are compared as sorted (key, vectors) pairs: two sentences of other words can share a key.)"""
    exported = []
    for name in ("a.dpc", "b.dpc"):
        _export(documents, pipeline, embeddings, loaded_keys, tmp_path / name, ExportSettings(noise=False))
        exported.append(sorted((_key(s), s.vectors.tobytes()) for s in _sentences(tmp_path / name, loaded_keys)
                               if not any(_key(s)[0])))
    first, second = exported
    assert first and first == second


def test_draws_export_every_sentence_that_often_with_fresh_surrogates_and_noise(tmp_path, documents, pipeline,
                                                                             embeddings, loaded_keys):
    """Three draws: every sentence three times with the same tags, one copy after the other, no two
    copies with the same vectors; the header counts every copy, records the draws, and bounds each
    PHI token once."""
    index = {tag: i for i, tag in enumerate(TAGS)}
    given = [_key_of([index[tag] for tag in sentence.tags], sentence.casing)
             for d in documents[:20] for sentence in prepare_document(d, "BIO", attrgetter("source_type"))]
    once, once_summary = _export(documents[:20], pipeline, embeddings, loaded_keys, tmp_path / "once.dpc")
    header, summary = _export(documents[:20], pipeline, embeddings, loaded_keys, tmp_path / "three.dpc",
                              ExportSettings(draws=3))
    exported = _sentences(tmp_path / "three.dpc", loaded_keys)
    assert sorted(_key(sentence) for sentence in exported) == sorted(given * 3)
    keys = [_key(sentence) for sentence in exported]
    assert keys[0::3] == keys[1::3] == keys[2::3] != given  # a sentence's copies one after another, shuffled
    assert len({sentence.vectors.tobytes() for sentence in exported}) == len(exported)
    assert (header.draws, header.sentences, header.tokens) == (3, 3 * once.sentences, 3 * once.tokens)
    assert once.draws == 1 and "draws" not in once.fields()
    occurrences = summary["reidentification_bound"]["overall"]["occurrences"]
    assert occurrences == once_summary["reidentification_bound"]["overall"]["occurrences"] > 50


@pytest.mark.parametrize(("draws", "scheme", "message"), [(0, "surrogates", "at least 1"),
                                                          (2, "neighbours", "narrow it down")])
def test_draws_below_one_or_several_under_neighbours_are_refused(tmp_path, documents, pipeline, embeddings,
                                                                 loaded_keys, draws, scheme, message):
    with pytest.raises(ValueError, match=message):
        _export(documents[:3], pipeline, embeddings, loaded_keys, tmp_path / "a.dpc",
                ExportSettings(draws=draws, scheme=scheme))
    assert not (tmp_path / "a.dpc").exists()


@pytest.mark.parametrize(("field", "value", "message"), [("dtype", "int8", "dtype must be one of float16, float32"),
                                                          ("chunk_sentences", 0, "chunk_sentences must be at least 1")])
def test_wrong_export_settings_are_refused_naming_the_field(field, value, message):
    with pytest.raises(ValueError, match=message):
        ExportSettings(**{field: value})


def test_the_representer_is_loaded_once_per_bundle(exports, tmp_path, monkeypatch, documents, pipeline, embeddings,
                                                   loaded_keys):
    """The second of `exports` drew other noise (test above) from the model the first loaded."""
    from deidpool.representer.bundle import Bundle

    monkeypatch.setattr(Bundle, "load_representer", lambda self, deterministic=False: pytest.fail("loaded again"))
    assert _export(documents[:3], pipeline, embeddings, loaded_keys, tmp_path / "a.dpc").header.sentences > 0


def test_no_phi_token_reaches_the_representer_without_the_pseudonymizer(tmp_path, monkeypatch, documents, pipeline,
                                                                         embeddings, loaded_keys):
    """Every gold PHI token is replaced before anything is embedded, and nothing else is (every
    scheme replaces through `Pseudonymizer.replaced`)."""
    from deidpool.client import export as export_module
    from deidpool.pseudonymization.pseudonymize import Pseudonymizer

    embedded = []
    original_from_sentences = export_module.SentenceData.from_sentences
    monkeypatch.setattr(Pseudonymizer, "replaced", every_phi_token_replaced)
    monkeypatch.setattr(export_module.SentenceData, "from_sentences",
                        lambda sentences, *args, **options: (embedded.extend(sentences)
                                                             or original_from_sentences(sentences, *args, **options)))
    _export(documents[:20], pipeline, embeddings, loaded_keys, tmp_path / "a.dpc")
    given = [s for d in documents[:20] for s in prepare_document(d, "BIO", attrgetter("source_type"))]
    assert len(embedded) == len(given) and sum(tag != "O" for s in given for tag in s.tags) > 50
    for seen, before in zip(embedded, given):
        for token, original, tag in zip(seen.tokens, before.tokens, before.tags):
            assert token.text == ("SURROGATE" if tag != "O" else original.text)


# The header fields that differ between two exports by design, whatever the notes: a random
# nonce, the creation time and the hash of the ciphertext (fresh keys, surrogates and noise).
RANDOM_HEADER_FIELDS = {"nonce", "created", "body_sha256"}


def _dated(dates: list[str]) -> Document:
    """A note whose three PHI spans are `dates`."""
    text = "Seen on {}, again on {} and last on {} by the nurse.".format(*dates)
    spans, position = [], 0
    for date in dates:
        start = text.index(date, position)
        spans.append(Span(start, start + len(date), "DATE", date))
        position = start + len(date)
    return Document("note", text, tuple(spans))


def test_the_header_does_not_depend_on_the_original_phi_values_and_the_summary_holds_the_bound(
        tmp_path, pipeline, embeddings, loaded_keys):
    """Notes that differ only in their PHI values (the same tags and shapes): header JSON equal but
    for RANDOM_HEADER_FIELDS, while the bound, which depends on the values (the same date three
    times against three dates), differs; it is in the sealed summary, read back with the server's
    key, and is what `reidentification_bound` computes on the notes' PHI."""
    pseudonymizer = Pseudonymizer(embeddings, 100, "surrogates", "en")
    notes = {"same": _dated(["12/03/2020"] * 3), "different": _dated(["12/03/2020", "11/04/2021", "10/05/2022"])}
    phi = {name: [token for sentence in prepare_document(note, "BIO", attrgetter("source_type"))
                  for token in pseudonymizer.phi_tokens([t.text for t in sentence.tokens], sentence.tags)]
           for name, note in notes.items()}
    assert [token[1:] for token in phi["same"]] == [token[1:] for token in phi["different"]]  # tags and shapes
    headers, bounds = {}, {}
    for name, note in notes.items():
        header, summary = _export([note], pipeline, embeddings, loaded_keys, tmp_path / f"{name}.dpc")
        verified = verify_contribution(tmp_path / f"{name}.dpc", loaded_keys.institution_public)
        assert read_summary(tmp_path / f"{name}.dpc", loaded_keys.server, verified) == summary
        bounds[name] = summary["reidentification_bound"]
        assert bounds[name] == reidentification_bound(phi[name], pseudonymizer)
        headers[name] = {field: value for field, value in json.loads(header.to_bytes()).items()
                         if field not in RANDOM_HEADER_FIELDS}
    assert headers["same"] == headers["different"]
    assert json.dumps(headers["same"], sort_keys=True) == json.dumps(headers["different"], sort_keys=True)
    empirical = [bounds[name]["overall"]["mean_success"]["empirical"] for name in notes]
    assert empirical[0] != empirical[1]


def test_header_records_n_and_the_summary_the_bound_of_the_exported_phi(tmp_path, documents, pipeline, embeddings,
                                                                        loaded_keys):
    header, summary = _export(documents[:20], pipeline, embeddings, loaded_keys, tmp_path / "a.dpc",
                              ExportSettings(neighbours=3, scheme="neighbours"))
    assert header.neighbours == 3 and header.pseudonymization.startswith("embedding-neighbours")
    bound = summary["reidentification_bound"]
    given = [s for d in documents[:20] for s in prepare_document(d, "BIO", attrgetter("source_type"))]
    assert bound["neighbours"] == 3
    assert bound["overall"]["occurrences"] == sum(tag != "O" for s in given for tag in s.tags)
    assert bound["overall"]["hidden"] > 0 and 0 < bound["overall"]["mean_success"]["uniform"] <= 1
    assert "DATE" in bound["categories"]


def test_surrogates_are_the_default_and_groups_is_recorded_and_bounded_when_asked(tmp_path, documents, pipeline,
                                                                                embeddings, loaded_keys):
    header, summary = _export(documents[:20], pipeline, embeddings, loaded_keys, tmp_path / "a.dpc")
    assert header.pseudonymization == "type-surrogates+number-shapes/1"
    bound = summary["reidentification_bound"]  # N is recorded but does not apply
    assert bound["scheme"] == "surrogates" and bound["overall"]["hidden"] > 0
    header, summary = _export(documents[:20], pipeline, embeddings, loaded_keys, tmp_path / "b.dpc",
                              ExportSettings(neighbours=3, scheme="groups"))
    assert header.pseudonymization == "embedding-groups+number-blocks/1"
    bound = summary["reidentification_bound"]
    assert (bound["scheme"], bound["neighbours"]) == ("groups", 3) and bound["overall"]["hidden"] > 0
    with pytest.raises(ValueError, match="scheme must be one of neighbours, groups, surrogates, got 'clusters'"):
        _export(documents[:2], pipeline, embeddings, loaded_keys, tmp_path / "c.dpc", ExportSettings(scheme="clusters"))
    assert not (tmp_path / "c.dpc").exists()


def test_the_surrogates_scheme_is_recorded_and_bounded_and_keeps_no_phi_token(
        tmp_path, documents, pipeline, embeddings, loaded_keys, monkeypatch):
    from deidpool.pseudonymization.pseudonymize import Pseudonymizer

    seen, labeled = [], Pseudonymizer.labeled_sentences

    def recording(self, sentences, rng):
        seen.append((sentences, labeled(self, sentences, rng)))
        return seen[-1][1]

    monkeypatch.setattr(Pseudonymizer, "labeled_sentences", recording)
    header, summary = _export(documents[:20], pipeline, embeddings, loaded_keys, tmp_path / "a.dpc",
                              ExportSettings(neighbours=1, scheme="surrogates"))
    assert header.pseudonymization == "type-surrogates+number-shapes/1"
    bound = summary["reidentification_bound"]
    assert bound["scheme"] == "surrogates" and bound["overall"]["hidden"] > 0
    phi = [(token.text, new.text) for given, drawn in seen for before, after in zip(given, drawn)
           for token, new, tag in zip(before.tokens, after.tokens, before.tags) if tag != "O" and token.text.isalnum()]
    kept = [token for token, new in phi if token.lower() == new.lower()]  # N = 1 replaces every token here
    places = frozenset().union(*PLACE_WORDS["en"].values())  # drawn whatever they were: equal by chance only
    assert phi and {word.casefold() for word in kept} <= kept_words("en") | places, kept  # and "of", kept


def test_bounded_memory_export_spills_and_keeps_every_sentence(tmp_path, documents, pipeline, embeddings,
                                                               loaded_keys, input_sentences):
    header = _export(documents, pipeline, embeddings, loaded_keys, tmp_path / "a.dpc",
                     ExportSettings(chunk_sentences=50, memory_bytes=20_000)).header
    assert header.sentences == len(input_sentences)
    assert sorted(_key(s) for s in _sentences(tmp_path / "a.dpc", loaded_keys)) == sorted(input_sentences)
    assert os.listdir(tmp_path) == ["a.dpc"]


def test_label_outside_the_tag_set_names_document_and_span(tmp_path, pipeline, embeddings, loaded_keys):
    document = Document("note-7", "Seen at Fenway today.", (Span(8, 14, "Location", "Fenway"),))
    with pytest.raises(CorpusError, match=r"document 'note-7', span Location \[8, 14\).*'Location' is not in"):
        _export([document], pipeline, embeddings, loaded_keys, tmp_path / "a.dpc")
    assert os.listdir(tmp_path) == []


def test_failure_midway_leaves_no_partial_file(tmp_path, documents, pipeline, embeddings, loaded_keys):
    def failing():
        yield from documents[:5]
        raise CorpusError("offsets outside the text", "notes/bad.xml", "span T3")

    with pytest.raises(CorpusError, match="notes/bad.xml: span T3"):
        _export(failing(), pipeline, embeddings, loaded_keys, tmp_path / "a.dpc",
                ExportSettings(chunk_sentences=20, memory_bytes=5_000))
    assert os.listdir(tmp_path) == []


def test_notes_without_sentences_are_refused(tmp_path, pipeline, embeddings, loaded_keys):
    with pytest.raises(CorpusError, match="no sentences"):
        _export([Document("empty", "   ")], pipeline, embeddings, loaded_keys, tmp_path / "a.dpc")
    assert os.listdir(tmp_path) == []


def test_a_representer_that_reads_characters_exports_the_surrogates_spelling(tmp_path, documents, chars_pipeline,
                                                                              embeddings, loaded_keys, input_sentences):
    """Exported through a representer that reads characters (the sentences built with their
    character ids, else it refuses to run), the contribution holds every sentence once; without
    noise the sentences without PHI come out the same twice, those with PHI do not (their
    surrogates, and so their characters, are drawn afresh). Sentences are compared as sorted
    (key, vectors) pairs: two sentences of other words can share a key."""
    exported = {}
    for name in ("a.dpc", "b.dpc"):
        _export(documents, chars_pipeline, embeddings, loaded_keys, tmp_path / name, ExportSettings(noise=False))
        exported[name] = sorted((_key(s), s.vectors.tobytes()) for s in _sentences(tmp_path / name, loaded_keys))
    assert sorted(key for key, _ in exported["a.dpc"]) == sorted(input_sentences)
    without_phi, with_phi = ([[pair for pair in exported[name] if any(pair[0][0]) == phi] for name in exported]
                             for phi in (False, True))
    assert without_phi[0] and without_phi[0] == without_phi[1]
    assert with_phi[0] and with_phi[0] != with_phi[1]
