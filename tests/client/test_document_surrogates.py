"""Tests of PHI replacement: markers, per-document consistent surrogates, date shifting that
keeps intervals and formats."""

import random
import re
from datetime import date, timedelta

import pytest

from deidpool.client.document_surrogates import MAX_SHIFT_DAYS, Surrogates, redacted_text, shift_date, surrogate_text
from deidpool.corpus.document import Document, Span

TEXT = ("John Smith (MRN 0012345) seen 03/04/2067 by Dr. Ann Lee; Mr. SMITH back on 03/14/2067, "
        "age 93, from Boston, phone 617-555-0199. Smith's daughter lives in Boston.")


def _document(*mentions):
    """A document of TEXT with spans for (text, type, occurrence) mentions."""
    spans = []
    for text, label, occurrence in mentions:
        start = [m.start() for m in re.finditer(re.escape(text), TEXT)][occurrence]
        spans.append(Span(start, start + len(text), label, text))
    return Document("d1", TEXT, tuple(spans))


DOCUMENT = _document(("John Smith", "PATIENT", 0), ("0012345", "MEDICALRECORD", 0), ("03/04/2067", "DATE", 0),
                     ("Ann Lee", "DOCTOR", 0), ("SMITH", "PATIENT", 0), ("03/14/2067", "DATE", 0), ("93", "AGE", 0),
                     ("Boston", "CITY", 0), ("617-555-0199", "PHONE", 0), ("Smith", "PATIENT", 1),
                     ("Boston", "CITY", 1))


def test_redaction_writes_category_markers():
    assert redacted_text(DOCUMENT) == (
        "[**NAME**] (MRN [**ID**]) seen [**DATE**] by Dr. [**NAME**]; Mr. [**NAME**] back on [**DATE**], "
        "age [**AGE**], from [**LOCATION**], phone [**CONTACT**]. [**NAME**]'s daughter lives in [**LOCATION**].")


def test_surrogates_are_consistent_within_a_document():
    text = surrogate_text(DOCUMENT, random.Random(4))
    pattern = (r"(\w+) (\w+) \(MRN (\d{7})\) seen (\d\d/\d\d/\d{4}) by Dr\. (\w+) (\w+); Mr\. ([A-Z]+) back on "
               r"(\d\d/\d\d/\d{4}), age 90\+, from (.+), phone (\d{3}-\d{3}-\d{4})\. (\w+)'s daughter lives in (.+)\.")
    match = re.fullmatch(pattern, text)
    assert match, text
    first, last, mrn, day1, _, _, upper_last, day2, city, phone, last_again, city_again = match.groups()
    assert upper_last == last.upper() and last_again == last and city_again == city
    assert {first, last, city} & {"John", "Smith", "Boston"} == set()
    assert mrn != "0012345" and phone != "617-555-0199"
    moved = [date(int(d[6:]), int(d[:2]), int(d[3:5])) for d in (day1, day2)]
    assert moved[1] - moved[0] == timedelta(days=10) and moved[0] != date(2067, 3, 4)


def test_documents_get_independent_surrogates():
    texts = {surrogate_text(DOCUMENT, random.Random(seed)) for seed in range(5)}
    assert len(texts) == 5


def test_the_date_offset_is_never_zero_and_bounded():
    offsets = {Surrogates(random.Random(seed)).offset.days for seed in range(200)}
    assert 0 not in offsets and max(map(abs, offsets)) <= MAX_SHIFT_DAYS


@pytest.mark.parametrize("text, expected", [
    ("2067-09-14", "2067-10-24"), ("09/14/2067", "10/24/2067"), ("9/14/67", "10/24/67"), ("9/14", "10/24"),
    ("March 3, 2020", "April 12, 2020"), ("MARCH 3", "APRIL 12"), ("Dec. 25th, 2019", "Feb. 3rd, 2020"),
    ("3 March 2020", "12 April 2020"), ("14-SEP-2067", "24-OCT-2067"), ("Sept 30", "Nov 9"),
    ("March 2020", "April 2020"), ("2067", "2067"),
])
def test_dates_move_by_the_offset_in_their_own_format(text, expected):
    assert shift_date(text, timedelta(days=40)) == expected


@pytest.mark.parametrize("text", ["Christmas", "13/45/2020", "last week"])
def test_unknown_dates_are_not_shifted(text):
    assert shift_date(text, timedelta(days=40)) is None


def test_types_without_a_generator_get_their_marker():
    document = Document("d", "in the MICU", (Span(7, 11, "DEPARTMENT", "MICU"),))
    assert surrogate_text(document, random.Random(0)) == "in the [**LOCATION**]"
