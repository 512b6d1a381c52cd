"""Tests of the pattern layer: each pattern on hand-written PHI and on the clinical look-alikes
it must refuse, the merge rule on hand-made spans, de-identification with patterns on a tiny
note, and the export path never reaching the pattern layer."""

import ast
import json
from dataclasses import replace
from pathlib import Path

import pytest

from deidpool.client.deidentify import find_phi
from deidpool.client.patterns import (
    BY_NAME,
    DEFAULT_PATTERNS,
    LOOKALIKES,
    PATTERNS,
    find_patterns,
    merge_spans,
    patterns_for,
    with_patterns,
)
from deidpool.corpus.categories import PHI_TYPES
from deidpool.corpus.document import Document, Span

ROOT = Path(__file__).resolve().parents[2]

# (pattern, text, the PHI it must find: a list of its words for a pattern whose spans are `by_word`)
POSITIVES = [
    ("date_iso", "seen 2099-10-12 in clinic", "2099-10-12"),
    ("date_mdy", "admitted 8/20/02 with CP", "8/20/02"),
    ("date_mdy", "10-15-2019 csru note", "10-15-2019"),
    ("date_month_day", "cultures from 8/23 pending", "8/23"),
    ("date_month_day", "Pt OOB to chair 8/28 with two assist", "8/28"),
    ("date_month_tenth", "Hemodialysis planned for 8/10, monitor resp status", "8/10"),
    ("date_month_year", "s/p PTCA to RCA 12/82.", "12/82"),
    ("date_month_name", "birthday is may 16, 2015.", "may 16, 2015"),
    ("date_month_name", "Nursing note 28 Oct, 88 0700", "28 Oct, 88"),
    ("date_month_name", "stated it was July 29th.", "July 29th"),
    ("date_month_name", "in march of 2022 pt was", "march of 2022"),
    ("date_ordinal_day", "cultures drawn on the 11th.", "11th"),
    ("date_apostrophe_year", "pmh: mi '92, cabg x3", "92"),
    ("date_event_year", "PMH: CABG 81, MVR", "81"),
    ("date_year", "RENAL CELL CA 1977, S/P NEPHRECTOMY", "1977"),
    ("phone", "daughter 204-943-1045 called", "204-943-1045"),
    ("phone", "brother (410) 422-6213.", "(410) 422-6213"),
    ("phone", "HOME-410 671-9309.", "410 671-9309"),
    ("phone_pager", "Pager: #54321", "54321"),
    ("phone_pager", "they can be reached at 202 2671093.", "202 2671093"),
    ("fax", "fax: 617-555-0199", "617-555-0199"),
    ("age_over_89", "98 yo gentleman admitted", "98"),
    ("age_over_89", "a 102 year old woman", "102"),
    ("age_over_89_stated", "age: 91, lives alone", "91"),
    ("medical_record_number", "MRN: 00123456", "00123456"),
    ("social_security_number", "ssn 123-45-6789 on file", "123-45-6789"),
    ("reference_number", "arrive this morning (ref # 8336652).", "8336652"),
    ("email", "mail j.doe+x@example.org today", "j.doe+x@example.org"),
    ("url", "see https://example.org/a?b=1.", "https://example.org/a?b=1"),
    ("url", "see www.example.com, then", "www.example.com"),
    ("doctor_title", "K 3.9, DR SWACKHAMER AWARE.", "SWACKHAMER"),
    ("doctor_title", "explained to family by Dr Lucie Lange and team", ["Lucie", "Lange"]),
    ("doctor_title", "rectal tube placed per dr. o'rourke's order", "o'rourke"),
    ("doctor_title", "FLUID CONTINUES PER DR B. GILL... RESP", ["B", "GILL"]),
    ("clinician_signature", "Monitor lab results \n \nIlene Macdonald RN\n", ["Ilene", "Macdonald"]),
    ("clinician_signature", "QUIET NIGHT FOR PT. \n \n DAN A. FORMAN-LYONS, RRT\n", ["DAN", "A", "FORMAN-LYONS"]),
    ("clinician_signature", "all is well at this time. q. lander rrt", ["q", "lander"]),
    ("clinician_initial", "LAB: INR THIS AM 6.0. E. WELSH AWARE. PT", ["E", "WELSH"]),
    ("clinician_initial", "REVERSALS NOT GIVEN PER K. ABRAMS PA. RESP", ["K", "ABRAMS"]),
    ("clinician_initial", "Reported to D. Phyl. Coags ok.", ["D", "Phyl"]),
    ("patient_title", "mr nicholson had a very uneventful night", "nicholson"),
    ("patient_title", "neuro: Mrs. McLaughlin's speech cont garbled", "McLaughlin"),
    ("relative_name", "SOCIAL: Husband Rich Martino in to visit.", ["Rich", "Martino"]),
    ("relative_name", "Social- Son, David updated by attending", "David"),
    ("relative_name", "pt spokesperson is Nancy Cetrone his niece.", ["Nancy", "Cetrone"]),
    ("relative_name_visit", "SOCIAL: PT'S SON JOHN IN TO VISIT THROUGH", "JOHN"),
    ("relative_name_visit", "social: son bill called twice for update", "bill"),
    ("relative_name_visit", "pt's daughter sarah spent the night", "sarah"),
    ("time_of_day", "Time: 3:15pm", "3:15pm"),
]

# Clinical look-alikes the default pattern set must leave alone.
TRAPS = [
    "BP 120/80, HR 88",
    "BP 110/46-170/ SKIN warm",
    "PAP 45-47/18 on milrinone",
    "c/o incisional pain 5/10, medicated",
    "pain #4/10, medicated with tylenol",
    "developed 10/10 angina",
    "chest discomfort rated 6/10 at rest",
    "at 0400 pt developed 4/10 CP",
    "remains on CPAP 5/5, 40%",
    "PSV 12/5, 40%. TV 400-500",
    "weaned to PS 10/5 overnight",
    "placed on a/c 800x12/10/40% no changes",
    "IVF D5 1/2 NS at 125/hr",
    "crackles 1/3 up bilaterally",
    "slept for 3 1/2 hours",
    "ate 1/2 of breakfast, 3/4 of lunch",
    "trialed 5/5 this am, tolerated well",
    "ABG 7.35/45/91/26/0",
    "CO/CI 5.4/2.7 SVR 1200",
    "strength 5/5 in all extremities",
    "+3/6 SEM at apex",
    "lasix 40 mg IV @ 2000, labs at 2000",
    "NURSING NOTE 1900-0700",
    "TV 900-1000, RR 16",
    "SVR 882-1326, CVP 8",
    "heparin 1000 units/hr, dopamine 5 mcg/kg/min",
    "85 yo man, 89 year old woman",
    "HOB 30' at all times",
    "on 1st step mattress",
    "Pt may need more lasix; decreased dopa",
    "nc 02 dec from 4->2",
    "K 4.5, Mg 2.0, plt 120, Hct 27.9",
    "Time: 3:15pm, 0700 rounds",
    # Name cues followed by no name, and clinical words that look like cues.
    "dr aware of low u/o. Dr. notified, no new orders. Will discuss with doctor about percocets",
    "SKIN-duoderm on back-D&I,drs.rt.fa",
    "ECHO showed 25% EF w/ 3-4+MR. Given total 6u PRBC",
    "unable to quantify severity of MR d/t MVR",
    "MS changes ?etiology. Monitor for changes in MS.",
    "son in to visit, wife called. Daughter called for update",
    "SON & DAUGHTER IN TO VISIT, WIFE MADE AWARE OF PLAN",
    "husband at bedside all night; daughter visiting, updated on plan",
    "Hsb is ENT physician and will call",
    "desire to make their father CMO, family aware",
    "interpretation of daughter\"I'm nauseous\"",
    "sx prn\npercocet prn\nUpdate PRN.\n",
    "replete lytes prn. titrate dopa to MAP > 60. R groin PA line intact",
    "H.O aware, no new orders. Neb given by R.T. Seen by P.T.",
    "sent for C. diff. BS R>L. Called MD, aware.",
]


@pytest.mark.parametrize("name, text, phi", POSITIVES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(POSITIVES)])
def test_each_pattern_finds_its_phi(name, text, phi):
    found = [text[s.start:s.end] for s in BY_NAME[name].spans(text)]
    assert found == ([phi] if isinstance(phi, str) else phi)


@pytest.mark.parametrize("text", TRAPS)
def test_the_default_patterns_leave_clinical_look_alikes_alone(text):
    assert find_patterns(text) == ()


def test_every_pattern_has_a_positive_and_a_known_label():
    assert {name for name, _, _ in POSITIVES} == {pattern.name for pattern in PATTERNS}
    for pattern in PATTERNS:
        assert pattern.label in PHI_TYPES and PHI_TYPES[pattern.label].corpus.startswith("i2b2-2014")


def test_clock_times_are_not_in_the_default_set():
    assert BY_NAME["time_of_day"] not in DEFAULT_PATTERNS
    assert find_patterns("Time: 3:15pm", [BY_NAME["time_of_day"]])[0].text == "3:15pm"


def test_spans_never_start_or_end_with_whitespace():
    text = "Tel 263-8235   Fax 234-9521"
    assert [(s.text, s.source_type) for s in find_patterns(text)] == [("263-8235", "PHONE"), ("234-9521", "FAX")]
    assert find_patterns(text)[0].start == 4


def _span(text, start, end, label):
    return Span(start, end, label, text[start:end])


def test_name_patterns_give_a_span_per_word_so_the_taggers_words_stay_apart():
    text = "SOCIAL: Husband Rich Martino in to visit."
    tagger = (_span(text, 16, 20, "RelativeProxyName"), _span(text, 21, 28, "RelativeProxyName"))
    merged = with_patterns(Document("d", text, tagger), [BY_NAME["relative_name"]]).spans
    assert [(s.text, s.source_type) for s in merged] == [("Rich", "PATIENT"), ("Martino", "PATIENT")]
    whole = replace(BY_NAME["relative_name"], by_word=False)
    assert [s.text for s in with_patterns(Document("d", text, tagger), [whole]).spans] == ["Rich Martino"]


# (text, the number pair a tagger took for a date): a look-alike drops it
TAGGER_LOOK_ALIKES = [
    ("pt tried on nasal bipap, 10/5, unable to tolerate", "10/5"),
    ("RESP: intubated on IMV 6/5PS/8PEEP", "6/5"),
    ("Attempted to wean to PSV 8/5 with borderline abg", "8/5"),
    ("PAP/plateau 23/17. BS coarse", "23/17"),
    ("formula will be changed to 3/4 str Nepro", "3/4"),
    ("HAS RALES 1/3 UP BILAT", "1/3"),
    ("pt c/o CP, 5/10, ECG done", "5/10"),
    ("describes pain as 5/10 with movement", "5/10"),
    ("developed severe 10/10 angina", "10/10"),
]
# (text, the date a tagger found): no look-alike refuses it
TAGGER_DATES = [
    "MECH VENT VIA TRACH (PLACED 8/14). AC 100%",  # the ventilator word 15 characters before
    "ceftaz rec'd 8/2 - 8/10. currently on vanco",
    "DAUGHTER TO ARRIVE 9/9 @ APPROX 1900",
]


@pytest.mark.parametrize("text, pair", TAGGER_LOOK_ALIKES)
def test_a_taggers_number_pair_inside_a_look_alike_is_dropped(text, pair):
    start = text.index(pair)
    tagger = Document("d", text, (_span(text, start, start + len(pair), "Date"),))
    assert with_patterns(tagger).spans == ()
    assert with_patterns(tagger, [p for p in DEFAULT_PATTERNS if not p.refuses]).spans == tagger.spans


@pytest.mark.parametrize("text", TAGGER_DATES)
def test_a_taggers_dates_outside_look_alikes_stay(text):
    date = next(word for word in text.replace("(", " ").replace(")", " ").split() if "/" in word and word[0].isdigit())
    start = text.index(date)
    span = _span(text, start, start + len(date.rstrip(".")), "Date")
    assert span in with_patterns(Document("d", text, (span,))).spans


def test_look_alikes_add_no_span_of_their_own_and_belong_to_the_english_layer():
    text = "bipap 10/5, pain 5/10"
    assert find_patterns(text) == () and with_patterns(Document("d", text)).spans == ()
    assert [s.text for s in LOOKALIKES[0].spans(text)] == ["10/5"]
    assert all(p.refuses and p.default for p in LOOKALIKES) and not any(p.refuses for p in PATTERNS)
    assert set(LOOKALIKES) <= set(patterns_for("en"))
    assert {p.name for p in patterns_for("es") if p.refuses} == {"es_duration"}  # the Spanish layer's own


TEXT = "Irene Czyzewicz seen 8/20/02, call 204-943-1045 now"


def test_merge_keeps_disjoint_spans_of_both_sources():
    tagger = [_span(TEXT, 0, 15, "PTName")]
    patterns = [_span(TEXT, 21, 28, "DATE")]
    assert merge_spans(tagger, patterns, TEXT) == (tagger[0], patterns[0])


def test_merge_joins_overlaps_over_their_extent_labelled_by_the_longest():
    shorter_tagger = [_span(TEXT, 21, 25, "Date")]  # "8/20" of "8/20/02"
    assert merge_spans(shorter_tagger, [_span(TEXT, 21, 28, "DATE")], TEXT) == (_span(TEXT, 21, 28, "DATE"),)
    longer_tagger = [_span(TEXT, 30, 47, "Phone")]  # "call 204-943-1045"
    assert merge_spans(longer_tagger, [_span(TEXT, 35, 47, "PHONE")], TEXT) == (_span(TEXT, 30, 47, "Phone"),)
    partial = [_span(TEXT, 33, 38, "Location")]  # "ll 20": overlaps the phone's start
    assert merge_spans(partial, [_span(TEXT, 35, 47, "PHONE")], TEXT) == (_span(TEXT, 33, 47, "PHONE"),)


def test_merge_prefers_the_pattern_label_on_equal_extents_and_chains_overlaps():
    assert merge_spans([_span(TEXT, 21, 28, "Phone")], [_span(TEXT, 21, 28, "DATE")], TEXT) == \
        (_span(TEXT, 21, 28, "DATE"),)
    chain = merge_spans([_span(TEXT, 16, 22, "HCPName"), _span(TEXT, 25, 33, "Location")],
                        [_span(TEXT, 21, 28, "DATE")], TEXT)
    assert chain == (_span(TEXT, 16, 33, "Location"),)  # the Location span (8 characters) is the longest


def test_merge_leaves_touching_spans_apart_and_nothing_overlapping():
    touching = merge_spans([_span(TEXT, 16, 21, "HCPName")], [_span(TEXT, 21, 28, "DATE")], TEXT)
    assert touching == (_span(TEXT, 16, 21, "HCPName"), _span(TEXT, 21, 28, "DATE"))
    assert merge_spans([], [], TEXT) == ()
    Document("d", TEXT, merge_spans([_span(TEXT, 0, 30, "PTName")], [_span(TEXT, 21, 28, "DATE")], TEXT)).validate()


NOTE = ("98 yo woman admitted 8/20/02, seen again 8/23. BP 120/80, pain 5/10, CPAP 5/5.\n"
        "Daughter Irene 204-943-1045, pager 54321.")


def test_deidentify_with_patterns_merges_them_with_the_tagger(pipeline, embeddings):
    note = Document("note", NOTE)
    tagger_only = next(find_phi([note], pipeline, embeddings))
    merged = next(find_phi([note], pipeline, embeddings, patterns=DEFAULT_PATTERNS))
    merged.validate()
    assert merged == with_patterns(tagger_only, DEFAULT_PATTERNS)
    pattern_spans = find_patterns(NOTE)
    assert [s.text for s in pattern_spans] == ["98", "8/20/02", "8/23", "Irene", "204-943-1045", "54321"]
    for span in pattern_spans:
        assert any(m.start <= span.start and span.end <= m.end for m in merged.spans), span


def test_the_deidentify_command_uses_patterns_unless_told_not_to(tmp_path, pipeline_path, key_files):
    from typer.testing import CliRunner

    from deidpool.cli import app

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "note.txt").write_text(NOTE)
    common = ["client", "deidentify", "--pipeline", str(pipeline_path), "--provider-key",
              str(key_files.provider.public), "--notes", str(tmp_path / "notes"), "--format", "json"]
    texts = {}
    for flag in ("--patterns", "--no-patterns"):
        out = tmp_path / f"{flag}.jsonl"
        result = CliRunner().invoke(app, [*common, "--out", str(out), flag])
        assert result.exit_code == 0, result.output
        spans = json.loads(out.read_text())["spans"]
        texts[flag] = [NOTE[s["start"]:s["end"]] for s in spans]
    assert all(any(phi in text for text in texts["--patterns"]) for phi in ("204-943-1045", "54321", "8/23"))
    assert texts["--patterns"] != texts["--no-patterns"]


def _project_imports(module: str, skip: tuple[str, ...] = ()) -> set[str]:
    """The project modules `module` imports, directly or through other project modules but `skip`."""
    seen, todo = set(), [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in skip:
            continue
        parts = name.split(".")  # deidpool.<folder>.<module> lives in <folder>/ at the root (pyproject's package-dir)
        mapped = len(parts) > 1 and (ROOT / parts[1] / "__init__.py").exists()
        path = ROOT.joinpath(*parts[1:]) if mapped else ROOT.joinpath(*parts)
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        if not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            found = []
            if isinstance(node, ast.Import):
                found = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            todo += [f for f in found if f.split(".")[0] == "deidpool"]
    return seen


def test_the_export_path_reaches_the_pattern_layer_only_through_its_safety_net():
    """Exports carry gold labels, never predictions: the patterns only flag unlabeled tokens to
    pseudonymize (tests/client/test_safety_net.py checks the exported tags)."""
    reached = _project_imports("deidpool.client.export", skip=("deidpool.client.safety_net",))
    # the walk does follow imports
    assert "deidpool.client.inference" in reached and "deidpool.contribution.container" in reached
    assert "deidpool.client.safety_net" in reached
    assert "deidpool.client.patterns" not in reached and "deidpool.client.deidentify" not in reached
    assert "deidpool.client.patterns" in _project_imports("deidpool.client.safety_net")
