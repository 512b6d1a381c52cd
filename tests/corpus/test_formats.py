"""Unit tests of the format readers and writers on small in-memory notes, of their errors on
bad input (each must name the file and the line or tag), and of `deidpool corpus convert`."""

import json
import re
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from deidpool.cli import app
from deidpool.corpus import CorpusError, Document, Span
from deidpool.corpus.categories import I2B2_CATEGORIES, I2B2_TYPES, PHI_TYPES
from deidpool.corpus.errors import CorpusWarning
from deidpool.corpus.formats import brat as brat_format
from deidpool.corpus.formats import read_corpus, write_corpus


def span(text: str, piece: str, source_type: str, span_id: str = "", comment: str = "") -> Span:
    start = text.index(piece)
    return Span(start, start + len(piece), source_type, piece, span_id, comment)


TEXT_A = '  Seen by Dr. Smith\r\non 09/14/2067 ]]> & <ok> "q"\rCall 555-1234.\n\n'
TEXT_B = "Moved to\nBoston General with Mrs. José\nÑúñez.\n"
# sorted by id, as the folder formats read them back
DOCUMENTS = [
    Document("12-1", TEXT_A, (span(TEXT_A, "Smith", "HCPName", "T1"), span(TEXT_A, "09/14/2067", "Date"),
                              span(TEXT_A, "555-1234", "Phone", "T9", "checked"))),
    Document("12-2", TEXT_B, (span(TEXT_B, "José\nÑúñez", "RelativeProxyName"),
                              span(TEXT_B, "Boston General", "Location"))),
    Document("7-1", "No PHI here.", ()),
]
ROUND_TRIPS = [("i2b2", "out"), ("meddocan", "out"), ("brat", "out"), ("physionet", "out"),
               ("json", "out.jsonl"), ("json", "out")]


def write_file(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def read_error(path: Path, fmt: str, **kw) -> CorpusError:
    with pytest.raises(CorpusError) as error:
        read_corpus(path, fmt, **kw)
    return error.value


# -- round trips ------------------------------------------------------------------------

@pytest.mark.parametrize("fmt, name", ROUND_TRIPS)
def test_documents_round_trip_exactly(tmp_path, fmt, name):
    write_corpus(DOCUMENTS, tmp_path / name, fmt)
    assert read_corpus(tmp_path / name, fmt) == DOCUMENTS


@pytest.mark.parametrize("fmt, generated", [("i2b2", "P1"), ("brat", "T2"), ("json", "")])
def test_span_ids_survive_and_missing_ones_are_generated(tmp_path, fmt, generated):
    write_corpus(DOCUMENTS, tmp_path / "out", fmt)
    assert [s.id for s in read_corpus(tmp_path / "out", fmt)[0].spans] == ["T1", generated, "T9"]


def test_xml_writer_uses_category_elements_the_asked_root_and_escapes_cr(tmp_path):
    write_corpus(DOCUMENTS, tmp_path / "i2b2", "i2b2")
    write_corpus(DOCUMENTS, tmp_path / "med", "meddocan")
    i2b2 = (tmp_path / "i2b2" / "12-1.xml").read_text(encoding="utf-8")
    assert "<deIdi2b2>" in i2b2 and "<MEDDOCAN>" in (tmp_path / "med" / "12-1.xml").read_text(encoding="utf-8")
    assert '<NAME id="T1" start="14" end="19" text="Smith" TYPE="HCPName" comment=""/>' in i2b2
    assert 'comment="checked"' in i2b2 and "&#13;" in i2b2 and "]]]]><![CDATA[>" in i2b2
    assert read_corpus(tmp_path / "i2b2" / "12-1.xml", "i2b2")[0].spans[2].comment == "checked"


def test_xml_single_file_holds_one_document(tmp_path):
    write_corpus(DOCUMENTS[:1], tmp_path / "one.xml", "i2b2")
    assert read_corpus(tmp_path / "one.xml", "i2b2") == [Document("one", TEXT_A, DOCUMENTS[0].spans)]
    with pytest.raises(CorpusError, match="one document, not 3"):
        write_corpus(DOCUMENTS, tmp_path / "all.xml", "i2b2")


def test_xml_writer_refuses_characters_xml_cannot_hold(tmp_path):
    with pytest.raises(CorpusError, match="U\\+0001") as error:
        write_corpus([Document("bad", "a\x01b")], tmp_path / "out", "i2b2")
    assert "'bad'" in str(error.value)


def test_brat_text_is_byte_exact_and_ann_follows_span_order(tmp_path):
    write_corpus(DOCUMENTS, tmp_path / "out", "brat")
    assert (tmp_path / "out" / "12-1.txt").read_bytes() == TEXT_A.encode("utf-8")
    ann = (tmp_path / "out" / "12-2.ann").read_text(encoding="utf-8").splitlines()
    assert ann[0] == "T1\tRelativeProxyName 34 44\tJosé Ñúñez"
    assert ann[1].startswith("T2\tLocation 9 23\t")
    assert (tmp_path / "out" / "7-1.ann").read_text() == ""


def test_physionet_writer_matches_the_corpus_layout(tmp_path):
    write_corpus(DOCUMENTS[1:], tmp_path / "out", "physionet")
    assert (tmp_path / "out" / "id.text").read_text(encoding="utf-8") == (
        f"START_OF_RECORD=12||||2||||\n{TEXT_B}||||END_OF_RECORD\n\n"
        "START_OF_RECORD=7||||1||||\nNo PHI here.||||END_OF_RECORD\n\n")
    assert (tmp_path / "out" / "id-phi.phrase").read_text(encoding="utf-8").splitlines()[0] == \
        "12 2 34 44 RelativeProxyName José Ñúñez"


def test_conll_export_and_lossy_read_back(tmp_path):
    write_corpus(DOCUMENTS, tmp_path / "out.conll", "conll")
    lines = (tmp_path / "out.conll").read_text(encoding="utf-8").split("\n")
    assert lines[:2] == ["-DOCSTART- 12-1", ""]
    assert "Smith\tB-HCPName" in lines and "09\tB-Date" in lines and "2067\tI-Date" in lines
    back = read_corpus(tmp_path / "out.conll", "conll")
    assert [d.id for d in back] == ["12-1", "12-2", "7-1"]
    assert [(s.source_type, s.text) for s in back[0].spans] == [
        ("HCPName", "Smith"), ("Date", "09 / 14 / 2067"), ("Phone", "555 - 1234")]
    assert back[2].text == "No PHI here ."


def test_conll_lines_before_docstart_form_a_document_named_after_the_file(tmp_path):
    path = write_file(tmp_path / "notes.conll", "Dr\tO\nSmith\tB-HCPName\n\nseen\tO\n")
    assert read_corpus(path, "conll") == [Document("notes", "Dr Smith\nseen", (Span(3, 8, "HCPName", "Smith"),))]


# -- errors every reader must report with file and line/tag -------------------------------

BAD_SPANS = {
    "outside": ((Span(0, 99, "Date", "2067"),), "outside the text"),
    "mismatch": ((Span(0, 4, "Date", "1999"),), "differs from the text"),
    "overlap": ((Span(0, 4, "Date", "2067"), Span(2, 6, "Phone", "67 x")), "overlapping"),
}
WHERE = {"i2b2": "9-1.xml", "brat": "9-1.ann", "physionet": "id-phi.phrase", "json": "out.jsonl"}


def _write_bad(tmp_path, fmt, spans):
    path = tmp_path / ("out.jsonl" if fmt == "json" else "out")
    write_corpus([Document("9-1", "2067 x", spans)], path, fmt)
    return path


@pytest.mark.parametrize("fmt", WHERE)
@pytest.mark.parametrize("case", BAD_SPANS)
def test_bad_spans_are_errors_naming_file_and_span(tmp_path, fmt, case):
    spans, message = BAD_SPANS[case]
    error = read_error(_write_bad(tmp_path, fmt, spans), fmt)
    assert message in error.reason and error.path.endswith(WHERE[fmt]) and "'9-1'" in error.where


@pytest.mark.parametrize("fmt", WHERE)
def test_overlapping_spans_are_read_when_asked_for(tmp_path, fmt):
    spans = BAD_SPANS["overlap"][0]
    assert read_corpus(_write_bad(tmp_path, fmt, spans), fmt, overlaps=True) == [Document("9-1", "2067 x", spans)]


@pytest.mark.parametrize("fmt", WHERE)
def test_unknown_span_type_is_an_error(tmp_path, fmt):
    path = _write_bad(tmp_path, fmt, (Span(0, 4, "Date", "2067"),))
    for file in (path.rglob("*") if path.is_dir() else [path]):
        file.write_text(file.read_text(encoding="utf-8").replace("Date", "NICKNAME"), encoding="utf-8")
    error = read_error(path, fmt)
    assert "unknown PHI type 'NICKNAME'" in error.reason and error.path.endswith(WHERE[fmt])


@pytest.mark.parametrize("fmt, name", [("i2b2", "a.xml"), ("brat", "a.txt"), ("physionet", "id.text"),
                                       ("json", "a.jsonl"), ("conll", "a.conll")])
def test_empty_file_warns_or_fails_in_strict_mode(tmp_path, fmt, name):
    path = write_file(tmp_path / name, " \n")
    with pytest.warns(CorpusWarning, match="empty file"):
        assert read_corpus(path, fmt) == []
    assert "empty file" in read_error(path, fmt, strict=True).reason


@pytest.mark.parametrize("fmt, name", [("brat", "a.txt"), ("physionet", "id.text"), ("json", "a.jsonl"),
                                       ("conll", "a.conll")])
def test_non_utf8_file_is_an_error_naming_the_byte_offset(tmp_path, fmt, name):
    error = read_error(write_file(tmp_path / name, b"abc\xffdef\n"), fmt)
    assert "not UTF-8" in error.reason and error.where == "byte offset 3" and name in str(error)


@pytest.mark.parametrize("fmt", ["json", "conll"])
def test_split_is_refused_by_formats_without_splits(tmp_path, fmt):
    assert "no named splits" in read_error(tmp_path, fmt, split="test").reason


@pytest.mark.parametrize("fmt", ["meddocan", "brat"])
def test_split_of_document_folders_reads_the_nearest_splits_json(tmp_path, fmt):
    """A split of a folder of per-document files keeps the ids listed in splits.json, found in the
    folder or up to two above it (MEDDOCAN: meddocan/splits.json beside train/xml)."""
    folder = tmp_path / "corpus" / "train" / fmt
    write_corpus(DOCUMENTS, folder, fmt)
    write_file(tmp_path / "corpus" / "splits.json", json.dumps({"site_a": ["12-2", "7-1"], "provider": ["12-1"]}))
    assert [d.id for d in read_corpus(folder, fmt, split="site_a")] == ["12-2", "7-1"]
    assert [d.id for d in read_corpus(folder, fmt, split="provider")] == ["12-1"]
    assert len(read_corpus(folder, fmt)) == 3


@pytest.mark.parametrize("splits, message", [
    ({"site_a": ["12-1"]}, "unknown split 'test'; available: site_a"),
    ({"test": ["12-1", "99-1"]}, "lists 1 document(s) with no file"),
    ({"test": "12-1"}, "is not a list of ids"),
    (None, "there is no splits.json"),
])
def test_bad_document_splits_are_errors_naming_the_file(tmp_path, splits, message):
    folder = tmp_path / "xml"
    write_corpus(DOCUMENTS, folder, "meddocan")
    if splits is not None:
        write_file(folder / "splits.json", json.dumps(splits))
    error = read_error(folder, "meddocan", split="test")
    assert message in error.reason
    assert "splits.json" in str(error)


def test_split_of_a_single_document_file_is_refused(tmp_path):
    write_corpus(DOCUMENTS, tmp_path / "xml", "meddocan")
    assert "no named splits" in read_error(tmp_path / "xml" / "12-1.xml", "meddocan", split="test").reason


# -- i2b2 / MEDDOCAN XML -------------------------------------------------------------------

def xml(text: str, tags: str = "", root: str = "deIdi2b2") -> str:
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<{root}>\n<TEXT><![CDATA[{text}]]></TEXT>\n'
            f"<TAGS>\n{tags}\n</TAGS>\n</{root}>\n")


def test_xml_reader_accepts_meddocan_root_and_trusts_type_over_element_name(tmp_path):
    tag = '<OTHER id="T3" start="0" end="3" text="Ana" TYPE="FAMILIARES_SUJETO_ASISTENCIA" comment=""/>'
    path = write_file(tmp_path / "caso.xml", xml("Ana vino.", tag, root="MEDDOCAN"))
    [document] = read_corpus(path, "meddocan")
    assert document == Document("caso", "Ana vino.", (Span(0, 3, "FAMILIARES_SUJETO_ASISTENCIA", "Ana"),))
    assert document.spans[0].id == "T3" and document.spans[0].category == "NAME"


def test_malformed_xml_names_file_and_line(tmp_path):
    path = write_file(tmp_path / "bad.xml", xml("x", '<DATE id="P0" start="0" end="1" text="x" TYPE="DATE">'))
    error = read_error(path, "i2b2")
    assert "malformed XML: mismatched tag" in error.reason and error.where.startswith("line 6,")
    assert "bad.xml" in str(error)


def test_non_utf8_xml_names_the_line(tmp_path):
    path = write_file(tmp_path / "bad.xml", xml("QQ").encode().replace(b"QQ", b"\xff"))
    error = read_error(path, "i2b2")
    assert "malformed XML" in error.reason and error.where.startswith("line 3,")


@pytest.mark.parametrize("tag, message", [
    ('<DATE id="P0" start="0" text="2067" TYPE="DATE"/>', "missing attribute(s) end"),
    ('<DATE id="P0" start="zero" end="4" text="2067" TYPE="DATE"/>', "must be integers"),
])
def test_bad_xml_tags_are_named(tmp_path, tag, message):
    error = read_error(write_file(tmp_path / "n.xml", xml("2067", tag)), "i2b2")
    assert message in error.reason and error.where == "TAGS element 1 <DATE id='P0'>"


@pytest.mark.parametrize("content, message", [
    ("<notes><TEXT>x</TEXT></notes>", "root element is <notes>"),
    ("<deIdi2b2><TAGS/></deIdi2b2>", "no <TEXT> element"),
])
def test_xml_structure_errors(tmp_path, content, message):
    assert message in read_error(write_file(tmp_path / "n.xml", content), "i2b2").reason


# -- BRAT ----------------------------------------------------------------------------------

def brat(tmp_path: Path, ann: str | None, text: str = "Seen 2067 by Smith.\n") -> Path:
    write_file(tmp_path / "n.txt", text)
    if ann is not None:
        write_file(tmp_path / "n.ann", ann)
    return tmp_path


def test_brat_txt_without_ann_is_a_note_without_phi(tmp_path):
    assert read_corpus(brat(tmp_path, None), "brat") == [Document("n", "Seen 2067 by Smith.\n")]


@pytest.mark.parametrize("ann, message", [
    ("T1\tDate 5 9\t2067\nT2\tHCPName 13 15;16 18\tSm th\n", "discontinuous span T2"),
    ("T1\tDate five 9\t2067\n\nT2\tHCPName 13 18\tSmith\n", "must be integers"),
    ("T1 Date 5 9 2067\n", "expected 'ID<TAB>TYPE START END<TAB>TEXT'"),
    ("T1\tDate 5\t2067\n", "expected 'TYPE START END'"),
])
def test_bad_ann_lines_name_file_and_line(tmp_path, ann, message):
    error = read_error(brat(tmp_path, ann), "brat")
    bad_line = 2 if "discontinuous" in message else 1
    assert message in error.reason and error.path.endswith("n.ann") and error.where == f"line {bad_line}"


def test_other_ann_lines_are_ignored_with_a_warning(tmp_path):
    path = brat(tmp_path, "T1\tDate 5 9\t2067\r\n#1\tAnnotatorNotes T1\tyear\r\nA1\tNegated T1\r\n")
    with pytest.warns(CorpusWarning) as caught:
        [document] = read_corpus(path, "brat")
    assert document.spans == (Span(5, 9, "Date", "2067"),)
    assert [str(w.message).split(": ", 1)[1] for w in caught] == [
        "line 2: note line ignored: only T (text-bound) lines are read",
        "line 3: attribute line ignored: only T (text-bound) lines are read"]
    assert read_error(path, "brat", strict=True).where == "line 2"


# -- PhysioNet -----------------------------------------------------------------------------

NOTES = ("START_OF_RECORD=1||||1||||\nSeen by Smith.\n||||END_OF_RECORD\n\n"
         "START_OF_RECORD=2||||1||||\nCall 555-1234\n||||END_OF_RECORD\n")


def physionet(tmp_path: Path, phrases: str = "", notes: str = NOTES, splits: dict | None = None) -> Path:
    write_file(tmp_path / "id.text", notes)
    write_file(tmp_path / "id-phi.phrase", phrases)
    if splits is not None:
        write_file(tmp_path / "splits.json", json.dumps(splits))
    return tmp_path


def test_physionet_reads_records_and_phrases(tmp_path):
    path = physionet(tmp_path, "1 1 8 13 HCPName Smith\n2 1 5 13 Phone 555-1234")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_corpus(path, "physionet") == read_corpus(path / "id.text", "physionet") == [
            Document("1-1", "Seen by Smith.\n", (Span(8, 13, "HCPName", "Smith"),)),
            Document("2-1", "Call 555-1234\n", (Span(5, 13, "Phone", "555-1234"),))]


def test_physionet_stray_lines_are_skipped_with_a_warning(tmp_path):
    path = physionet(tmp_path, notes=NOTES.replace("\n\nSTART", "\n\nstray text\nSTART"))
    with pytest.warns(CorpusWarning, match="line 5: stray line between records ignored: 'stray text'"):
        assert [d.id for d in read_corpus(path, "physionet")] == ["1-1", "2-1"]
    assert read_error(path, "physionet", strict=True).where == "line 5"


@pytest.mark.parametrize("notes, message, line", [
    (NOTES.replace("\n||||END_OF_RECORD\n\nSTART", "\n\nSTART"), "START_OF_RECORD before the END_OF_RECORD", 4),
    (NOTES.rsplit("||||END_OF_RECORD", 1)[0], "record has no END_OF_RECORD", 5),
    (NOTES.replace("2||||1", "1||||1"), "patient 1 note 1 appears twice", 5),
])
def test_broken_records_name_the_line(tmp_path, notes, message, line):
    error = read_error(physionet(tmp_path, notes=notes), "physionet")
    assert message in error.reason and error.where == f"line {line}" and error.path.endswith("id.text")


@pytest.mark.parametrize("phrase, message", [
    ("1 1 8 x HCPName Smith", "must be integers"),
    ("1 1 8 13 HCPName", "expected 6 fields"),
    ("3 1 0 4 Phone Call", "patient 3 note 1 is not in the text file"),
])
def test_bad_phrase_lines_name_file_and_line(tmp_path, phrase, message):
    error = read_error(physionet(tmp_path, f"2 1 5 13 Phone 555-1234\n{phrase}\n"), "physionet")
    assert message in error.reason and error.where == "line 2" and error.path.endswith("id-phi.phrase")


def test_physionet_merges_a_phrase_extending_the_previous_one(tmp_path):
    notes = "START_OF_RECORD=1||||1||||\nat Kessler-Adventist Hosp today||||END_OF_RECORD\n"
    path = physionet(tmp_path, "1 1 3 20 Location Kessler-Adventist\n1 1 11 25 Location Adventist Hosp\n", notes)
    with pytest.warns(CorpusWarning, match="line 2: phrase overlaps the previous Location phrase"):
        [document] = read_corpus(path, "physionet")
    assert document.spans == (Span(3, 25, "Location", "Kessler-Adventist Hosp"),)
    assert "merged" in read_error(path, "physionet", strict=True).reason


def test_physionet_split_selects_patients(tmp_path):
    path = physionet(tmp_path, splits={"provider": [1], "test": [2]})
    assert [d.id for d in read_corpus(path, "physionet", split="test")] == ["2-1"]
    error = read_error(path, "physionet", split="site_z")
    assert "unknown split 'site_z'; available: provider, test" in error.reason and error.path.endswith("splits.json")


def test_physionet_split_without_splits_file_is_an_error(tmp_path):
    assert "no splits.json" in read_error(physionet(tmp_path), "physionet", split="test").reason


def test_physionet_folder_without_text_file_is_an_error(tmp_path):
    assert "no id.text" in read_error(tmp_path, "physionet").reason


@pytest.mark.parametrize("document, message", [
    (Document("nohyphen", "x"), "is not '<patient>-<note>'"),
    (Document("a b-1", "x"), "is not '<patient>-<note>'"),
    (Document("1-1", "x||||END_OF_RECORD\ny"), "would end or start a record"),
    (Document("1-1", "x\nSTART_OF_RECORD=1||||2||||\ny"), "would end or start a record"),
])
def test_physionet_writer_refuses_what_the_format_cannot_hold(tmp_path, document, message):
    with pytest.raises(CorpusError, match=message):
        write_corpus([document], tmp_path / "out", "physionet")


# -- JSON and CoNLL ------------------------------------------------------------------------

GOOD_JSON = json.dumps({"id": "a", "text": "2067", "spans": [{"start": 0, "end": 4, "type": "Date", "text": "2067"}]})


@pytest.mark.parametrize("line, message", [
    ('{"id": "b", "text": "x"', "malformed JSON"),
    ('["a"]', "expected a JSON object, got list"),
    ('{"id": "b", "spans": []}', "missing field 'text'"),
    ('{"id": "b", "text": "x", "spans": [{"start": "0", "end": 1, "type": "Date", "text": "x"}]}',
     "field 'start' must be of type int"),
    ('{"id": "b", "text": "x", "spans": [{"start": true, "end": 1, "type": "Date", "text": "x"}]}',
     "field 'start' must be of type int"),
    ('{"id": "b", "text": "x", "spans": [{"start": 0, "end": 1, "type": "Date", "text": "x", "id": 3}]}',
     "field 'id' must be of type str"),
])
def test_bad_json_lines_name_file_and_line(tmp_path, line, message):
    error = read_error(write_file(tmp_path / "d.jsonl", f"{GOOD_JSON}\n\n{line}\n"), "json")
    assert message in error.reason and error.where.startswith("line 3") and error.path.endswith("d.jsonl")


def test_json_folder_errors_name_the_file(tmp_path):
    write_file(tmp_path / "a.json", GOOD_JSON)
    write_file(tmp_path / "b.json", '{\n "id": "b",\n "text": }')
    error = read_error(tmp_path, "json")
    assert error.path.endswith("b.json") and error.where == "line 3"


@pytest.mark.parametrize("content, message, where", [
    ("-DOCSTART- a\n\nSmith\n", "expected 'TOKEN<TAB>TAG'", "line 3"),
    ("-DOCSTART- a\n\nDr\tO\nSmith\tX-HCPName\n\n", "is not a BIO tag", "lines 3-4"),
])
def test_bad_conll_lines_are_named(tmp_path, content, message, where):
    error = read_error(write_file(tmp_path / "a.conll", content), "conll")
    assert message in error.reason and error.where == where


# -- conversion ----------------------------------------------------------------------------

def test_failed_write_leaves_existing_output_untouched(tmp_path):
    out = tmp_path / "out"
    write_corpus(DOCUMENTS, out, "brat")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    for fmt, bad in [("brat", [DOCUMENTS[0], DOCUMENTS[0]]), ("physionet", [DOCUMENTS[0], Document("x", "y")])]:
        with pytest.raises(CorpusError):
            write_corpus(bad, out, fmt, replace=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_what_is_at_the_output_path_is_replaced_only_when_the_caller_says_so(tmp_path):
    notes = tmp_path / "notes"
    write_corpus(DOCUMENTS, notes, "brat")
    before = {p.name: p.read_bytes() for p in notes.iterdir()}
    with pytest.raises(CorpusError, match="refusing to replace") as refused:
        write_corpus(DOCUMENTS[:1], notes, "brat")
    assert str(notes) in str(refused.value)
    assert {p.name: p.read_bytes() for p in notes.iterdir()} == before
    (tmp_path / "empty").mkdir()
    write_corpus(DOCUMENTS[:1], tmp_path / "empty", "brat")  # an empty folder holds nothing to lose
    write_corpus(DOCUMENTS[:1], notes, "brat", replace=True)
    assert {p.name for p in notes.iterdir()} < set(before)


def test_a_private_output_is_readable_by_its_owner_alone(tmp_path):
    write_corpus(DOCUMENTS, tmp_path / "review", "brat", private=True)
    modes = {p.name: p.stat().st_mode & 0o777 for p in [tmp_path / "review", *(tmp_path / "review").rglob("*")]}
    assert modes.pop("review") == 0o700 and set(modes.values()) == {0o600}


def test_cli_convert_writes_and_reports_counts(tmp_path):
    write_corpus(DOCUMENTS, tmp_path / "in.jsonl", "json")
    result = CliRunner().invoke(app, ["corpus", "convert", str(tmp_path / "in.jsonl"), str(tmp_path / "out"),
                                      "--from", "json", "--to", "brat"])
    assert result.exit_code == 0, result.output
    assert "wrote 3 documents, 5 spans" in result.output
    assert read_corpus(tmp_path / "out", "brat") == DOCUMENTS


def test_cli_convert_split_strict_and_errors(tmp_path):
    path = physionet(tmp_path / "pn", "1 1 8 13 HCPName Smith\n", NOTES.replace("\n\nSTART", "\n\nstray\nSTART"),
                     splits={"provider": [1], "test": [2]})
    convert = ["corpus", "convert", str(path), str(tmp_path / "out.jsonl"), "--from", "physionet", "--to", "json"]
    with pytest.warns(CorpusWarning, match="stray line"):
        result = CliRunner().invoke(app, [*convert, "--split", "provider"])
    assert result.exit_code == 0 and "wrote 1 documents, 1 spans" in result.output
    strict = CliRunner().invoke(app, [*convert, "--strict"])
    assert strict.exit_code == 2 and "line 5: stray line" in strict.output
    assert read_corpus(tmp_path / "out.jsonl", "json")[0].id == "1-1"  # untouched by the failed run
    missing = CliRunner().invoke(app, ["corpus", "convert", str(tmp_path / "nope"), str(tmp_path / "o"),
                                       "--from", "brat", "--to", "json"])
    assert missing.exit_code == 2 and "no such file or folder" in missing.output


def test_brat_writer_renames_ids_that_are_not_text_bound_ids(tmp_path):
    doc = Document("d", "Smith and Jones",
                   (Span(0, 5, "PATIENT", "Smith", id="P0"), Span(10, 15, "PATIENT", "Jones", id="T1")))
    write_corpus([doc], tmp_path / "out", "brat")
    assert (tmp_path / "out" / "d.ann").read_text().splitlines() == ["T2\tPATIENT 0 5\tSmith",
                                                                     "T1\tPATIENT 10 15\tJones"]


# -- BRAT configuration beside the notes -----------------------------------------------

def _brat_entities(conf: str) -> dict[str, str | None]:
    """entity type -> its parent (None at the top), parsed as BRAT's projectconfig does: the
    [entities] section, '#' comments and '---' separators skipped, depth = indent length."""
    section, parents, last_at_depth = None, {}, {}
    for line in conf.split("\n"):
        if line.startswith("["):
            section = line.strip("[]")
            continue
        if section != "entities" or not line.strip() or line.lstrip().startswith("#") or set(line.strip()) == {"-"}:
            continue
        name = line.strip()
        depth = len(line) - len(line.lstrip())
        assert re.fullmatch(r"[A-Za-z0-9_-]+", name), f"BRAT cannot store the type {name!r}"
        assert name not in parents, f"{name} is configured twice"
        assert depth == 0 or depth - 1 in last_at_depth, f"{name} has no parent"
        parents[name] = last_at_depth[depth - 1] if depth else None
        last_at_depth[depth] = name
    return parents


def test_brat_output_is_a_collection_configured_with_the_phi_types(tmp_path):
    write_corpus(DOCUMENTS, tmp_path / "out", "brat", types=["NICKNAME", "FECHAS"])
    conf = (tmp_path / "out" / "annotation.conf").read_text(encoding="utf-8")
    assert conf.index("[entities]") < conf.index("[relations]") < conf.index("[events]") < conf.index("[attributes]")
    parents = _brat_entities(conf)
    assert {name for name, parent in parents.items() if parent is None} == set(I2B2_TYPES) | {"NICKNAME"}
    assert {name: parent for name, parent in parents.items() if parent} == {
        "HCPName": "DOCTOR", "Date": "DATE", "Phone": "PHONE", "RelativeProxyName": "PATIENT",
        "Location": "LOCATION-OTHER", "FECHAS": "DATE"}
    drawn = re.findall(r"^(\S+)\tbgColor:(#[0-9a-f]{6})$", (tmp_path / "out" / "visual.conf").read_text(), re.MULTILINE)
    assert {name for name, _ in drawn} == set(parents)
    colours = dict(drawn)
    assert colours["RelativeProxyName"] == colours["PATIENT"] == colours["DOCTOR"] != colours["DATE"]
    assert read_corpus(tmp_path / "out", "brat") == DOCUMENTS  # the .conf files are no notes


def test_brat_configuration_follows_the_category_table():
    colours = dict(re.findall(r"^(\S+)\tbgColor:(\S+)$", brat_format.visual_conf(PHI_TYPES), re.MULTILINE))
    assert len({colours[type_] for type_ in I2B2_TYPES}) == len(I2B2_CATEGORIES), "one colour per category"
    parents = _brat_entities(brat_format.annotation_conf(PHI_TYPES))
    assert set(parents) == set(PHI_TYPES)
    for name, parent in parents.items():
        assert (parent or name) == PHI_TYPES[name].type
    assert brat_format.annotation_conf(["PTName", "Age"]) == brat_format.annotation_conf(["Age", "PTName", "Age"])
