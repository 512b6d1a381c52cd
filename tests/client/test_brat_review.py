"""The BRAT review round trip: `client deidentify --format brat` output is a BRAT collection
configured with the PHI types; a reviewer's corrections to its .ann files (a false positive
deleted, a wrong span replaced by the right one, a note added) are what `client export
--format brat` then trains on."""

import warnings
from operator import attrgetter

import pytest
from typer.testing import CliRunner

from deidpool.cli import app
from deidpool.client.deidentify import PhiFinder
from deidpool.contribution.container import iter_sentences
from deidpool.corpus.document import Span
from deidpool.corpus.errors import CorpusWarning
from deidpool.corpus.formats import read_corpus
from deidpool.corpus.prepare import prepare_document
from deidpool.corpus.tagging import decode


def _run(*args):
    return CliRunner().invoke(app, [str(arg) for arg in args])


def _overlap(left: Span, right: Span) -> bool:
    return left.start < right.end and right.start < left.end


def _review(folder, document, remove, add=()):
    """Edit `document`'s .ann as BRAT does: delete the lines of `remove`, append `add` with
    fresh T ids, and an annotator note on the first new one."""
    ann = folder / f"{document.id}.ann"
    lines = [line for line in ann.read_text(encoding="utf-8").splitlines()
             if line.split("\t", 1)[0] not in {span.id for span in remove}]
    next_id = 1 + max([int(line.split("\t", 1)[0][1:]) for line in lines] or [0])
    for number, span in enumerate(add, next_id):
        lines.append(f"T{number}\t{span.source_type} {span.start} {span.end}\t{span.text}")
    if add:
        lines.append(f"#1\tAnnotatorNotes T{next_id}\tmissed by the pipeline")
    ann.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def _training_keys(documents, pipeline):
    """(tag ids, casing ids of the non-PHI tokens) of every sentence an export of `documents` holds."""
    index = {tag: i for i, tag in enumerate(pipeline.tags)}
    keys = []
    for document in documents:
        for sentence in prepare_document(document, pipeline.scheme, attrgetter(pipeline.label)):
            tags = [index[tag] for tag in sentence.tags]
            keys.append((tuple(tags), tuple(-1 if tag else int(c) for tag, c in zip(tags, sentence.casing))))
    return sorted(keys)


@pytest.mark.filterwarnings("ignore::corpus.errors.CorpusWarning")  # the reviewer's note, on every read
def test_reviewed_brat_output_is_what_the_next_export_trains_on(tmp_path, documents, pipeline, embeddings,
                                                                 pipeline_path, key_files, loaded_keys):
    notes = tmp_path / "notes"
    notes.mkdir()
    for document in documents[:3]:
        (notes / f"{document.id}.txt").write_text(document.text, encoding="utf-8")
    review = tmp_path / "review"
    result = _run("client", "deidentify", "--pipeline", pipeline_path, "--provider-key", key_files.provider.public,
                  "--notes", notes, "--out", review, "--format", "brat")
    assert result.exit_code == 0, result.output

    conf = (review / "annotation.conf").read_text(encoding="utf-8")
    configured = {line.strip() for line in conf.split("[relations]")[0].splitlines()[1:]
                  if line.strip() and not line.lstrip().startswith(("#", "-", "["))}
    assert PhiFinder(pipeline, embeddings).labels <= configured
    assert (review / "visual.conf").is_file()

    found = read_corpus(review, "brat")
    assert [d.text for d in found] == [d.text for d in documents[:3]] and found[0].spans and found[1].spans
    # reviewer: the first span of note 0 is a false positive; in note 1 a gold span replaces what overlaps it
    false_positive = found[0].spans[0]
    gold = documents[1].spans[0]
    missed = Span(gold.start, gold.end, gold.type, gold.text)
    wrong = [span for span in found[1].spans if _overlap(span, missed)]
    _review(review, found[0], [false_positive])
    _review(review, found[1], wrong, [missed])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        corrected = read_corpus(review, "brat")
    assert any(issubclass(w.category, CorpusWarning) and "note line ignored" in str(w.message) for w in caught)
    expected = {found[0].id: set(found[0].spans) - {false_positive},
                found[1].id: (set(found[1].spans) - set(wrong)) | {missed},
                found[2].id: set(found[2].spans)}
    assert {d.id: set(d.spans) for d in corrected} == expected
    assert {d.id: set(d.spans) for d in corrected} != {d.id: set(d.spans) for d in found}

    for document in corrected:  # the tags training sees decode to the corrected spans
        sentences = prepare_document(document, pipeline.scheme, attrgetter(pipeline.label))
        decoded = {span for s in sentences for span in decode(s.tokens, s.tags, pipeline.scheme)}
        assert decoded == {(span.start, span.end, span.source_type) for span in document.spans}

    contribution = tmp_path / "reviewed.dpc"
    result = _run("client", "export", "--bundle", pipeline_path, "--provider-key", key_files.provider.public,
                  "--notes", review, "--format", "brat", "--server-key", key_files.server.public,
                  "--key", key_files.institution.private, "--out", contribution)
    assert result.exit_code == 0, result.output
    exported = sorted((tuple(int(t) for t in s.tags), tuple(-1 if t else int(c) for t, c in zip(s.tags, s.casing)))
                      for s in iter_sentences(contribution, loaded_keys.server, loaded_keys.institution_public))
    assert exported == _training_keys(corrected, pipeline)
    assert exported != _training_keys(found, pipeline)
