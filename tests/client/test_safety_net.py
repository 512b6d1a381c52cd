"""The export's safety net for unlabeled PHI: what it flags (the pattern layer, a pipeline's
tagger), that flagged tokens are pseudonymized before the representer while their tags stay as
annotated, the header's counts, the review folder and its read-back, and `client export
--safety-net`."""

import json
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from deidpool.cli import app
from deidpool.client import export as export_module
from deidpool.client import safety_net as safety_net_module
from deidpool.client.export import export_contribution, review_unlabeled_phi
from deidpool.client.memory import remembered_phi
from deidpool.client.patterns import tag_set_label, with_patterns
from deidpool.client.safety_net import OFF, SafetyNet
from deidpool.contribution.container import iter_sentences, read_summary, verify_contribution
from deidpool.corpus.document import Document, Span
from deidpool.corpus.formats import read_corpus, write_corpus
from deidpool.corpus.prepare import prepare_document
from deidpool.pseudonymization.pseudonymize import Pseudonymizer

from .conftest import every_phi_token_replaced

TEXT = "Seen by Dr. Przybylo on 03/14/2093 at the clinic. Patient John Smith is stable, Retterer called."
FLAGGED = ["Przybylo", "03", "14", "2093"]  # by the pattern layer: a name after "Dr." and a date
UNLABELED = FLAGGED + ["Retterer"]  # a bare surname: only a tagger finds it


def _note(number: int = 0) -> Document:
    spans = tuple(Span(TEXT.index(word), TEXT.index(word) + len(word), "PATIENT", word) for word in ("John", "Smith"))
    return Document(f"note-{number}", TEXT, spans)


def test_the_memory_flags_a_string_the_notes_label_everywhere_but_here():
    labeled = [_note(number) for number in range(9)]
    missed = Document("note-9", TEXT, _note().spans[:1])  # "Smith" left unlabeled
    net = SafetyNet(patterns=(), memory=remembered_phi([*labeled, missed]))
    assert net.finders == ["memory"]
    (_, found), = net.found([missed])
    assert [(span.text, span.source_type) for span in found if span.text not in ("John",)] == [("Smith", "PATIENT")]
    assert SafetyNet(patterns=(), memory=remembered_phi([missed, _note()])).memory.keys() == {"John"}  # 1 of 2


def _export(documents, pipeline, embeddings, loaded_keys, out, **options):
    return export_contribution(documents, pipeline, embeddings, out, institution="site-a",
                               signing_key=loaded_keys.institution, server_key=loaded_keys.server_public,
                               progress=False, **options)


@pytest.fixture
def embedded(monkeypatch):
    """The sentences that reach the representer, every pseudonym "SURROGATE"."""
    seen = []
    original = export_module.SentenceData.from_sentences
    monkeypatch.setattr(Pseudonymizer, "replaced", every_phi_token_replaced)
    monkeypatch.setattr(export_module.SentenceData, "from_sentences",
                        lambda sentences, *args, **options: (seen.extend(sentences)
                                                             or original(sentences, *args, **options)))
    return seen


def _stub_tagger(monkeypatch, word="Retterer", label="PATIENT"):
    """A pipeline whose tagger finds `word` in every note."""
    def find_phi(documents, pipeline, embeddings, *, patterns=()):
        for document in documents:
            start = document.text.index(word)
            found = Document(document.id, document.text, (Span(start, start + len(word), label, word),))
            yield with_patterns(found, patterns)

    monkeypatch.setattr(safety_net_module, "find_phi", find_phi, raising=False)
    return SafetyNet(pipeline=SimpleNamespace(representer_id="rep-stub"), embeddings=None)


def test_patterns_and_a_tagger_flag_unlabeled_phi_which_never_reaches_the_representer(
        tmp_path, monkeypatch, embedded, pipeline, embeddings, loaded_keys):
    net = _stub_tagger(monkeypatch)
    header, summary = _export([_note(0), _note(1)], pipeline, embeddings, loaded_keys, tmp_path / "a.dpc",
                              safety_net=net, review=tmp_path / "review")
    words = [token.text for sentence in embedded for token in sentence.tokens]
    assert not set(UNLABELED + ["John", "Smith"]) & set(words)
    assert words.count("SURROGATE") == 2 * (len(UNLABELED) + 2) and "Seen" in words and "clinic" in words
    # the exported tags are the gold ones: only John and Smith are PHI
    exported = list(iter_sentences(tmp_path / "a.dpc", loaded_keys.server, loaded_keys.institution_public))
    outside = pipeline.tags.index("O")
    assert sum(int(tag) != outside for sentence in exported for tag in sentence.tags) == 4
    # the header names the finders; what they flagged depends on the notes' text: in the sealed summary
    assert header.safety_net == {"finders": ["patterns", "pipeline rep-stub"]}
    verified = verify_contribution(tmp_path / "a.dpc", loaded_keys.institution_public)
    assert verified.safety_net == header.safety_net
    assert summary["safety_net"] == {"flagged_tokens": 10, "categories": {"DATE": 6, "NAME": 4}}
    assert read_summary(tmp_path / "a.dpc", loaded_keys.server, verified) == summary
    assert summary["reidentification_bound"]["overall"]["occurrences"] == 14  # flagged tokens are bounded too


def test_the_review_folder_holds_gold_and_flagged_spans_and_reads_back_as_training_notes(
        tmp_path, pipeline, embeddings, loaded_keys):
    other = Document("note-9", "Nothing to see here.")
    flagged = review_unlabeled_phi([_note(), other], pipeline, SafetyNet(), tmp_path / "review")
    assert flagged.header() == {"finders": ["patterns"]}
    assert flagged.counts() == {"flagged_tokens": 4, "categories": {"DATE": 3, "NAME": 1}}
    [reviewed] = read_corpus(tmp_path / "review", "brat")  # only the note with flags
    assert reviewed.text == TEXT and (tmp_path / "review" / "annotation.conf").is_file()
    assert [(span.text, span.source_type) for span in reviewed.spans] == [
        ("Przybylo", "DOCTOR"), ("03/14/2093", "DATE"), ("John", "PATIENT"), ("Smith", "PATIENT")]
    # exported as it reads back (a reviewer found no false flag), the flags are labeled PHI now
    assert sum(tag != "O" for s in prepare_document(reviewed) for tag in s.tags) == 8
    header, summary = _export([reviewed], pipeline, embeddings, loaded_keys, tmp_path / "b.dpc")  # the default net
    assert summary["reidentification_bound"]["overall"]["occurrences"] == 8
    assert (header.safety_net, summary["safety_net"]) == ({"finders": ["patterns"]},
                                                          {"flagged_tokens": 0, "categories": {}})


def test_labeled_phi_is_not_flagged_and_off_flags_nothing(tmp_path, embedded, pipeline, embeddings, loaded_keys):
    text = "Seen by Dr. Przybylo on 03/14/2093."
    labeled = Document("n", text, (Span(12, 20, "DOCTOR", "Przybylo"), Span(24, 34, "DATE", "03/14/2093")))
    assert _export([labeled], pipeline, embeddings, loaded_keys, tmp_path / "a.dpc",
                   safety_net=SafetyNet()).summary["safety_net"]["flagged_tokens"] == 0
    embedded.clear()
    header = _export([_note()], pipeline, embeddings, loaded_keys, tmp_path / "b.dpc", safety_net=OFF).header
    assert header.safety_net["finders"] == [] and "Przybylo" in {t.text for s in embedded for t in s.tokens}


def test_a_flag_takes_the_bundle_s_label_of_its_type_or_category():
    labels = ["PTName", "HCPName", "Date", "Phone"]
    assert tag_set_label("DOCTOR", labels) == "HCPName"
    assert tag_set_label("FAX", labels) == "Phone"  # same category (CONTACT)
    assert tag_set_label("DATE", ["DATE", "Date"]) == "DATE"
    assert tag_set_label("EMAIL", ["PTName"]) == "EMAIL"
    assert tag_set_label("something", labels) == "something"


def _flagged(path, loaded_keys) -> int:
    """How many tokens the safety net flagged, from the contribution's sealed summary."""
    header = verify_contribution(path, loaded_keys.institution_public)
    return read_summary(path, loaded_keys.server, header)["safety_net"]["flagged_tokens"]


def _run(*args):
    return CliRunner().invoke(app, [str(arg) for arg in args])


@pytest.fixture(scope="module")
def notes(tmp_path_factory):
    folder = tmp_path_factory.mktemp("notes") / "notes"
    write_corpus([_note(0), _note(1)], folder, "brat")
    return folder


def _cli_export(pipeline_path, key_files, notes, out, *options):
    return _run("client", "export", "--bundle", pipeline_path, "--provider-key", key_files.provider.public,
                "--notes", notes, "--format", "brat", "--server-key", key_files.server.public,
                "--key", key_files.institution.private, "--out", out, *options)


def test_client_export_safety_net_modes(tmp_path, pipeline_path, key_files, notes, loaded_keys):
    help_text = " ".join(_run("client", "export", "--help").output.split())
    assert all(mode in help_text for mode in ("--safety-net", "pseudonymize:", "review:", "off:", "--pipeline"))

    result = _cli_export(pipeline_path, key_files, notes, tmp_path / "a.dpc")  # default: pseudonymize
    assert result.exit_code == 0, result.output
    # the memory of the notes (John, Smith: labeled wherever they occur) flags nothing more here
    assert "safety net (patterns, memory): 8 unlabeled tokens flagged (DATE 6, NAME 2)" in result.output
    assert len(read_corpus(tmp_path / "a.review", "brat")) == 2
    assert {path.stat().st_mode & 0o777 for path in [tmp_path / "a.review", *(tmp_path / "a.review").iterdir()]} \
        <= {0o700, 0o600}  # notes with PHI: the owner's alone
    assert _flagged(tmp_path / "a.dpc", loaded_keys) == 8
    reviewed = {path.name: path.read_bytes() for path in (tmp_path / "a.review").iterdir()}
    again = _cli_export(pipeline_path, key_files, notes, tmp_path / "a2.dpc", "--review", tmp_path / "a.review")
    assert again.exit_code == 2 and "refusing to replace" in again.output and not (tmp_path / "a2.dpc").exists()
    assert {path.name: path.read_bytes() for path in (tmp_path / "a.review").iterdir()} == reviewed

    result = _cli_export(pipeline_path, key_files, notes, tmp_path / "b.dpc", "--safety-net", "review",
                         "--review", tmp_path / "checked")
    assert result.exit_code == 0, result.output
    assert "nothing exported" in result.output and not (tmp_path / "b.dpc").exists()
    assert [d.id for d in read_corpus(tmp_path / "checked", "brat")] == ["note-0", "note-1"]

    result = _cli_export(pipeline_path, key_files, notes, tmp_path / "c.dpc", "--safety-net", "off")
    assert result.exit_code == 0 and "safety net off" in result.output and not (tmp_path / "c.review").exists()
    header = json.loads(_run("client", "inspect", tmp_path / "c.dpc", "--key", key_files.institution.public)
                        .output.split("\nsignature")[0])
    assert header["safety_net"] == {"finders": []}

    result = _cli_export(pipeline_path, key_files, notes, tmp_path / "d.dpc", "--safety-net", "sometimes")
    assert result.exit_code == 2 and "pseudonymize, review, off" in result.output


def test_client_export_runs_a_pipeline_s_tagger_in_the_safety_net(tmp_path, pipeline, pipeline_path, key_files,
                                                                 notes, loaded_keys):
    result = _cli_export(pipeline_path, key_files, notes, tmp_path / "a.dpc", "--pipeline", pipeline_path,
                         "--pipeline-key", key_files.provider.public)
    assert result.exit_code == 0, result.output
    header = verify_contribution(tmp_path / "a.dpc", loaded_keys.institution_public)
    assert header.safety_net["finders"] == ["patterns", "memory", f"pipeline {pipeline.representer_id}"]
    assert _flagged(tmp_path / "a.dpc", loaded_keys) >= 8


def test_client_export_s_memory_flags_a_string_labeled_in_half_of_its_occurrences(tmp_path, pipeline_path, key_files):
    notes = tmp_path / "notes"
    missed = Document("note-1", TEXT, _note().spans[:1])  # "Smith" labeled in note-0 only
    write_corpus([_note(0), missed], notes, "brat")
    result = _cli_export(pipeline_path, key_files, notes, tmp_path / "a.dpc", "--safety-net", "review",
                         "--review", tmp_path / "review")
    assert result.exit_code == 0, result.output
    reviewed = {document.id: document for document in read_corpus(tmp_path / "review", "brat")}
    flagged = [span.text for span in reviewed["note-1"].spans if span not in missed.spans]
    assert "Smith" in flagged and "Smith" not in [span.text for span in reviewed.get("note-0", _note()).spans
                                                   if span not in _note().spans]
