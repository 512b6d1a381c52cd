import pytest

from deidpool.corpus import CorpusError, Document, Span
from deidpool.corpus.categories import PHI_TYPES, markdown_table, phi_type

TEXT = "Seen by Dr. Smith on 09/14/2067."


def doc(*spans):
    return Document("note-1", TEXT, tuple(spans))


def test_valid_document_passes_and_spans_resolve_their_category():
    span = Span(12, 17, "HCPName", "Smith")
    assert doc(span, Span(21, 31, "Date", "09/14/2067")).validate() is not None
    assert (span.category, span.type, span.hipaa) == ("NAME", "DOCTOR", False)


@pytest.mark.parametrize("span, message", [
    (Span(12, 40, "HCPName", "Smith"), "outside the text"),
    (Span(12, 17, "HCPName", "Smyth"), "differs from the text"),
    (Span(12, 17, "NICKNAME", "Smith"), "unknown PHI type 'NICKNAME'"),
])
def test_bad_spans_are_named_in_the_error(span, message):
    with pytest.raises(CorpusError, match=message) as error:
        doc(span).validate("notes.xml")
    assert "notes.xml" in str(error.value) and "note-1" in str(error.value)


def test_overlapping_spans_are_rejected_unless_asked_for():
    document = doc(Span(8, 17, "HCPName", "Dr. Smith"), Span(12, 17, "PTName", "Smith"))
    with pytest.raises(CorpusError, match="overlapping"):
        document.validate()
    assert document.validate(overlaps=True) is document


def test_every_source_type_maps_to_a_known_i2b2_type():
    i2b2_types = {t.source_type for t in PHI_TYPES.values() if "i2b2-2014" in t.corpus}
    assert all(t.type in i2b2_types for t in PHI_TYPES.values())
    assert phi_type("NOMBRE_SUJETO_ASISTENCIA").hipaa and not phi_type("PROFESSION").hipaa
    assert markdown_table().count("\n") == len(PHI_TYPES) + 1


def test_the_documented_table_is_the_table_in_the_code():
    from pathlib import Path

    documented = (Path(__file__).resolve().parents[2] / "docs" / "phi-categories.md").read_text()
    assert documented.rstrip().endswith(markdown_table())
