"""A high-precision pattern layer for de-identifying raw notes at the institution: regular
expressions for the PHI whose written form gives it away (dates, phone numbers, ages over 89, IDs,
e-mail addresses, URLs) or whose context does (names after "Dr" or a relative's "wife"; signatures),
and the rule that merges their spans with a tagger's. `deidpool.client.deidentify` applies it to
unlabeled notes, the export's safety net (`deidpool.client.safety_net`) to labeled ones, to
pseudonymize the PHI their labels miss.

Every pattern refuses the look-alikes clinical notes are full of (120/80, pain scores, doses;
"dr aware"). A
pattern matches where its regex does and neither context check refuses: `not_after` in the
`CONTEXT` characters before the PHI (anchored at their end), `not_before` at the start of those
after it.

The layer is per language (`patterns_for(language, labels)`): English patterns (`PATTERNS`) carry
i2b2 2014 types, Spanish ones (`SPANISH_PATTERNS`) MEDDOCAN's, each renamed to a pipeline's label
of its i2b2 type (`tag_set_label`). Patterns with `default=False` (clock times, not PHI under HIPAA
Safe Harbor) are for institutions whose policy redacts them: pass them from `BY_NAME`.

Merge rule (`merge_spans`): the union of both sources' spans; overlapping spans (sharing a
character; touching ones do not) become one span over their joined extent (no character either
source marks is left in the clear), labelled like its longest member, a pattern winning ties.
Before the merge the English look-alikes (`LOOKALIKES`) drop the tagger spans inside them and the
Spanish forms (`Pattern.cuts`) cut overlapping tagger spans to their parts outside them
(`with_patterns`). Measured by experiments/pattern_layer.py and experiments/spanish_patterns.py
(see their results pages)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from deidpool.corpus.categories import PHI_TYPES
from deidpool.corpus.document import Document, Span
from deidpool.corpus.gazetteers import country_names, place_names

CONTEXT = 24  # characters of context the checks look at on each side
_WORD = re.compile(r"[a-z]+(?:['-][a-z]+)*", re.IGNORECASE)  # a word of a name: "O'Rourke", "Forman-Lyons"

_MONTHS = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|" \
          r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_FULL_MONTHS = r"(?:january|february|march|april|may|june|july|august|september|october|november|december)"
_DAY = r"(?:3[01]|[12]\d|0?[1-9])"
_MONTH = r"(?:1[0-2]|0?[1-9])"
_ORDINAL = r"(?:st|nd|rd|th)"
# Units and clinical look-alikes that follow a number that is no date.
_UNIT_AFTER = r"\s*(?:mg|mcg|ug|gm?\b|kg|ml|cc|l\b|meq|units?|u\b|%|mm|cm|hrs?\b|min|sec|bpm|lpm|x\b|/\s*min)"


@dataclass(frozen=True)
class Pattern:
    """One named pattern.

    Args:
        name: what the pattern finds, unique in the catalog.
        label: the i2b2 2014 type of its spans (a source type of `deidpool.corpus.categories`).
        regex: a span for each of the regex's groups named "phi..." that took part in the match
            (alternatives or a list name theirs phi, phi2, ...), else the whole match, less any
            whitespace at its edges.
        not_after: refuse a match whose preceding CONTEXT characters match this (anchor it with `$`).
        not_before: refuse a match whose following CONTEXT characters start with this.
        default: part of the default pattern set.
        by_word: a span for each word of the PHI (its letters, "B." giving "B"), as PhysioNet
            annotates names ("[Rich] [Martino]"), so that no two of a tagger's name spans are joined.
        refuses: a look-alike: its spans are no PHI, and the merge drops every tagger span that
            lies inside one (`with_patterns`); it adds no span of its own.
        defers: a guess the tagger may know better (a list name: "Granada" is a country, a city
            and a surname): the merge keeps its spans only where no tagger span overlaps them.
        relabels: the pattern's list is closed: a tagger span of the pattern's label whose whole
            text the regex does not match takes this label instead (a "country" that is no country
            is a city). No span is dropped: only its label changes.
        cuts: its form gives the PHI's extent better than a tagger ("a@b.es c@d.es" are two
            addresses, "mayo del 2006 y abril del 2009" two dates): a tagger span that overlaps one of
            its spans keeps only its parts outside it, each a span of its own.
    """

    name: str
    label: str
    regex: re.Pattern
    not_after: re.Pattern | None = None
    not_before: re.Pattern | None = None
    default: bool = True
    by_word: bool = False
    refuses: bool = False
    defers: bool = False
    relabels: str | None = None
    cuts: bool = False

    def spans(self, text: str) -> Iterator[Span]:
        """The spans this pattern finds in `text`, in offset order."""
        groups = [name for name in self.regex.groupindex if name.startswith("phi")] or [0]
        for match in self.regex.finditer(text):
            for start, end in sorted(match.span(group) for group in groups):
                yield from self._checked(text, start, end)

    def _checked(self, text: str, start: int, end: int) -> Iterator[Span]:
        """The span(s) of the PHI at [start, end) unless empty or refused by the context checks."""
        if start == end:
            return
        if self.not_after is not None and self.not_after.search(text, max(0, start - CONTEXT), start):
            return
        if self.not_before is not None and self.not_before.match(text, end, end + CONTEXT):
            return
        phi = text[start:end]  # without the whitespace a regex may take at its edges ("555-1234   ")
        start, end = start + len(phi) - len(phi.lstrip()), end - len(phi) + len(phi.rstrip())
        if not self.by_word:
            yield Span(start, end, self.label, text[start:end])
            return
        for word in _WORD.finditer(text, start, end):
            yield Span(word.start(), word.end(), self.label, word[0])


def _compile(pattern: str, flags: int = re.IGNORECASE) -> re.Pattern:
    return re.compile(pattern, flags)


class CompiledOnFirstUse:
    """A regex built by `build` when first used, not at import (a long list read from a package's
    data, such as the Spanish city list, which English notes need not pay for)."""

    def __init__(self, build: Callable[[], re.Pattern]):
        self._build = build

    @cached_property
    def _regex(self) -> re.Pattern:
        return self._build()

    def __getattr__(self, name: str):
        return getattr(self._regex, name)


def word_alternation(texts: Iterable[str]) -> re.Pattern:
    """A regex matching any of `texts` as a whole word (not inside a longer word), longest first."""
    ordered = sorted(set(texts), key=lambda text: (-len(text), text))
    return re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, ordered)) + r")(?!\w)")


# Words after which an m/d pair is a setting, pressure, score or count: the strong ones anywhere in the
# CONTEXT characters before it, the weak ones (that also precede dates) right before it.
_SETTING_WORDS = (r"(?:ps|psv|ips|cpap|bipap|peep|simv|imv|a/?c|vent(?:ilat\w*)?|settings?|flowby|fio2|pap\W?s?|svr|"
                  r"pcwp|wedge|scale|strength|grips?|abg|vbg|murmur|sem|i:e)")
_WEAK_SETTING_WORDS = r"(?:c/o|tv|bp|nbp|abp|sbp|map|pas|pad|cvp|co|ci|ra|pressures?|score|gas|ratio|wean\w*)"
_NOT_AFTER_MONTH_DAY = _compile(rf"(?:[\d/:^*=]|[.x+#]|[%&]\s*|\b{_WEAK_SETTING_WORDS}\s*[:=-]?\s*"
                                rf"|\b{_SETTING_WORDS}\b[^\n]{{0,20}})$")
_NOT_BEFORE_MONTH_DAY = _compile(
    r"(?:[/.]?\d|\s+\d+\s*%|\s*-\s*\.\d|,\s*\d+\s*%|\s*(?:way\s+up|up\b|ns\b|nss\b|str(?:ength)?\b|mmhg|%|cc|ml|mg|"
    r"hrs?\b|hours?|amps?|liters?|l\b|psv|ips|ps\b|cpap|peep|pain|cp\b|angina|sem|murmur|bl(?:ood)?\s*cx|dose|rate|"
    r"fio2|of\s+(?:d\d|ns|amp|time)))")
# Pain scores (x/10): refused with a pain word anywhere in the CONTEXT characters on either side.
_PAIN = r"\b(?:pain\w*|cp|angina|discomfort|ache\w*|hurts?|sore\w*|c/o)\b"
# Common fractions (1/2 NS, crackles 1/3 up, 3/4 strength) and equal pairs (CPAP 5/5, strength 5/5, pain 10/10).
_NOT_A_FRACTION = r"(?!(?:1/[2-8]|2/[34]|3/[48]|[57]/8)\b|(?P=pair)/(?P=pair)\b)"
_MONTH_DAY = rf"(?<![\w/.:'-])(?=(?P<pair>\d+)/){_NOT_A_FRACTION}(?P<phi>{_MONTH}/{{day}})(?![\w/]|\.\d|\s*-\s*\d+/)"

# Names, cued by what precedes or follows them (PhysioNet annotates each word of a name; a cue's name is
# one or two words). A name is a word of 2+ letters ("O'Rourke", "Forman-Lyons"; a possessive 's stays out)
# that is none of the words notes put after the cues: "dr aware", "son in to visit", "wife called".
_NAME = r"\b[a-z](?:[a-z]|['-](?!s\b)[a-z])+\b"
_CAPITALIZED_NAME = r"(?-i:(?:[A-Z]')?[A-Z][a-z]+(?:-[A-Z]?[a-z]+)*\b)"  # "Janet", "O'Driscoll", not "I'm" or "CMO"
_NOT_A_NAME = (r"(?:a|an|the|and|or|but|in|into|at|on|of|to|for|from|with|by|via|about|as|re|regarding|is|are|was|"
               r"were|be|been|has|had|have|will|would|can|could|did|does|do|who|which|that|this|these|those|he|she|"
               r"they|we|it|his|her|their|pt|pts|also|then|just|still|very|both|all|not|no|here|there|today|tonight|"
               r"now|later|again|present|aware|updated|called|calls|phoned|visited|visiting|visit|came|spoke|states|"
               r"stated|said|reports|reported|met|arrived|notified|brought|lives|living|died|in-laws?|other|"
               r"multiple|when|while|dr|md|rn|ho|team|rt|lt)\b")
_FAMILY = (r"(?:wife|husband|hsb|sons?|daughters?|dtrs?|brothers?|sisters?|mother|father|nephew|niece|neice|"
           r"grand(?:d)?aughters?|grandsons?|grandchild(?:ren)?|friends?|girlfriend|boyfriend|aunts?|uncles?|"
           r"cousins?|spouse|partner|proxy|hcp|spokesperson|fiancee?|(?:son|daughter|dtr|sister|brother)-in-law)\b")
_CREDENTIAL = r"\b(?:rn|r\.n|rrt|crt|np|md|msw|pa|lpn)\b\.?"
_INITIAL = r"(?-i:[A-Z]\.)"
# After a clinician's initial and name ("W. Marotta aware", "per K. Abrams PA").
_CLINICIAN_CUE = rf"(?:aware|notified|made[ \t]+aware|{_CREDENTIAL})"

_EMAIL = _compile(r"(?<![\w.+-])(?P<phi>[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,})\b")
_URL = _compile(r"(?P<phi>\b(?:https?://|www\.)[^\s<>\"')\]]+[^\s<>\"')\].,;:!?])")

PATTERNS: tuple[Pattern, ...] = (
    Pattern("date_iso", "DATE", _compile(rf"(?<![\d/.-])(?P<phi>(?:19|20)\d\d-{_MONTH}-{_DAY})(?![\d/-])")),
    Pattern("date_mdy", "DATE", _compile(
        rf"(?<![\w/.:-])(?P<phi>{_MONTH}(?P<sep>[/-]){_DAY}(?P=sep)(?:(?:19|20)\d\d|\d\d))(?![\w/-]|\.\d)"),
        not_after=_compile(rf"(?:[\d.x]\s*|\b{_SETTING_WORDS}\b[^\n]{{0,20}})$"),
        not_before=_compile(r"\s*(?:%|bpm|[/-]\d)")),
    Pattern("date_month_day", "DATE", _compile(_MONTH_DAY.format(day=r"(?:3[01]|1[1-9]|2\d|0?[1-9])")),
            not_after=_NOT_AFTER_MONTH_DAY, not_before=_NOT_BEFORE_MONTH_DAY),
    Pattern("date_month_tenth", "DATE", _compile(_MONTH_DAY.format(day="10")),
            not_after=_compile(rf"{_NOT_AFTER_MONTH_DAY.pattern}|{_PAIN}[^\n]*$", re.IGNORECASE),
            not_before=_compile(rf"{_NOT_BEFORE_MONTH_DAY.pattern}|[^\n]*?{_PAIN}", re.IGNORECASE)),
    Pattern("date_month_year", "DATE", _compile(
        rf"(?<![\w/.:'-])(?P<phi>{_MONTH}/(?:3[2-9]|[4-9]\d|(?:19|20)\d\d))(?![\w/]|\.\d|\s*-\s*\d+/)"),
        not_after=_NOT_AFTER_MONTH_DAY, not_before=_NOT_BEFORE_MONTH_DAY),
    Pattern("date_month_name", "DATE", _compile(
        rf"\b(?P<phi>{_MONTHS}\.?\s+{_DAY}{_ORDINAL}?\b(?:,?\s+(?:(?:19|20)\d\d|'\d\d))?"
        rf"|{_DAY}{_ORDINAL}?\s+(?:of\s+)?(?:{_FULL_MONTHS}\b(?:,?\s+(?:(?:19|20)\d\d|'?\d\d\b))?"
        rf"|{_MONTHS}\b\.?,?\s+(?:(?:19|20)\d\d|'?\d\d\b))"
        rf"|{_MONTHS}\.?,?\s+(?:of\s+)?(?:19|20)\d\d)(?!\d)"),
        not_before=_compile(_UNIT_AFTER)),
    Pattern("date_ordinal_day", "DATE", _compile(
        rf"\b(?:on|of|since|from|until|by)\s+the\s+(?P<phi>{_DAY}{_ORDINAL})(?=\s*(?:[.,;:)]|\n|$|of\b|at\b|@))")),
    Pattern("date_apostrophe_year", "DATE", _compile(r"(?<![\w'])'(?P<phi>\d\d)(?![\w'])"),
            not_after=_compile(r"\d\s*$")),
    Pattern("date_event_year", "DATE", _compile(
        r"\b(?:cabg|mi|cva|avr|mvr|ptca|pci|stent|ppm|aicd|chole|appy|tah)\s*(?:x\s*\d\s*)?,?\s*(?:in\s+)?"
        r"(?P<phi>\d\d)(?:'|\b)"), not_before=_compile(_UNIT_AFTER + r"|\s*(?:[-/.:]\s*\d|y|%)")),
    Pattern("date_year", "DATE", _compile(
        r"\b(?:in|since|of|year|yr|during|until|circa|cabg(?:\s*x\s*\d)?|mi|cva|avr|mvr|s/p|dx|diagnosed|"
        r"ptca|stent|repair|resection|lumpectomy|mastectomy|nephrectomy|ca|cancer|surgery|transplant|it\s+is)"
        r"\s*,?\s+(?P<phi>(?:19[3-9]\d|20[0-3]\d)s?)\b(?!\s*(?:-|to\b|->|hrs?\b|h\b|cc|ml|mg|u\b|units))")),
    Pattern("phone", "PHONE", _compile(
        r"(?<![\w/.])(?<!\d-)(?P<phi>(?:\+?1[\s.-])?(?:\(\d\d\d\)|\d\d\d)\s*[\s.-]?\s*[2-9]\d\d\s*[\s.-]\s*\d{4}"
        r"(?:\s*(?:x|ext\.?)\s*\d{1,5})?)(?![\w/-]|\.\d)"),
        not_after=_compile(r"[\d.:/]\s*$"), not_before=_compile(_UNIT_AFTER)),
    Pattern("phone_pager", "PHONE", _compile(
        r"\b(?:pager|pgr|pg|beeper|beep|page|cell(?:ular)?|phone|tel|telephone|ph|home|work|contact(?:ed)?\s+at|"
        r"reached\s+at|call)\s*(?:number|no\.?)?[\s:#-]*(?P<phi>\d{4,7}|\d{3}[\s-]+\d{3,4}[\s-]*\d{0,4})\b"),
        not_before=_compile(_UNIT_AFTER + r"|\s*(?:am|pm)\b|[/.]\d")),
    Pattern("fax", "FAX", _compile(
        r"\bfax\s*(?:number|no\.?|#)?\s*[:#-]*\s*(?P<phi>(?:\(\d{3}\)\s*|\d{3}[\s.-]*)?\d{3}[\s.-]*\d{4})\b")),
    Pattern("age_over_89", "AGE", _compile(
        r"(?<![\d./-])(?P<phi>9\d|1[01]\d)\s*-?\s*(?:y/?o\b|y\.\s?o\.?|yo[mf]?\b|yr?s?[\s-]*old|years?[\s-]*old|"
        r"y\s*/\s*o\b|years?\s+of\s+age)")),
    Pattern("age_over_89_stated", "AGE", _compile(r"\b(?:age|aged)\s*:?\s*(?P<phi>9\d|1[01]\d)\b"),
            not_before=_compile(r"\s*(?:%|mg|mm|cc|/|-\d)")),
    Pattern("medical_record_number", "MEDICALRECORD", _compile(
        r"\b(?:mrn|mr\s*#|med(?:ical)?\s+rec(?:ord)?\s*(?:number|no\.?|#)?|unit\s+(?:number|no\.?|#)|hospital\s+"
        r"(?:number|no\.?|#))\s*[:#]*\s*(?P<phi>[a-z]{0,3}\d[\d-]{3,14}\d)\b")),
    Pattern("social_security_number", "SSN", _compile(r"(?<![\w/.-])(?P<phi>\d{3}-\d\d-\d{4})(?![\w/-])")),
    Pattern("reference_number", "IDNUM", _compile(
        r"\b(?:ref(?:erence)?|acct|account|case|claim|policy|member|id)\s*(?:number|no\.?|#)?\s*[:#]*\s*"
        r"(?P<phi>\d[\d-]{4,14}\d)\b")),
    Pattern("email", "EMAIL", _EMAIL),
    Pattern("url", "URL", _URL),
    Pattern("doctor_title", "DOCTOR", _compile(
        rf"\b(?:dr|doctor|drs)\b\.?[ \t]*(?P<phi>(?:[a-z]\.[ \t]*)?(?!{_NOT_A_NAME})"
        rf"(?:{_CAPITALIZED_NAME}[ \t]+(?!{_NOT_A_NAME}){_CAPITALIZED_NAME}|{_NAME}))"), by_word=True),
    Pattern("clinician_signature", "DOCTOR", _compile(
        rf"(?:^|(?<=[.!?:]))[ \t]*(?P<phi>(?:(?!{_NOT_A_NAME}){_NAME}|[a-z]\.)(?:[ \t]+[a-z]\.)?[ \t]+"
        rf"(?!{_NOT_A_NAME}){_NAME})[ \t]*,?[ \t]*{_CREDENTIAL}[ \t]*$", re.IGNORECASE | re.MULTILINE),
        by_word=True),
    Pattern("clinician_initial", "DOCTOR", _compile(
        rf"(?:\b(?:per|by|to|with)\b|->)[ \t]*(?P<phi>{_INITIAL}[ \t](?!{_NOT_A_NAME}){_NAME})"
        rf"(?=[ \t]*(?:[.:]|{_CLINICIAN_CUE}))"
        rf"|(?<![\w./])(?P<phi2>{_INITIAL}[ \t]?(?!{_NOT_A_NAME}){_NAME})(?=[ \t]*,?[ \t]*{_CLINICIAN_CUE})"),
        by_word=True),
    Pattern("patient_title", "PATIENT", _compile(
        rf"(?<![\d+])\b(?:mr|mrs)\b\.?[ \t]*(?P<phi>(?!{_NOT_A_NAME}){_NAME})"), not_before=_compile(r"/")),
    Pattern("relative_name", "PATIENT", _compile(
        rf"\b(?=[a-z](?-i:[a-z])){_FAMILY}[ \t]*[,:(\"-]*[ \t]*(?:is[ \t]+)?(?P<phi>(?!{_NOT_A_NAME}|{_FAMILY})"
        rf"{_CAPITALIZED_NAME}(?:[ \t]+(?!{_NOT_A_NAME}|{_FAMILY}){_CAPITALIZED_NAME})?)"), by_word=True),
    Pattern("relative_name_visit", "PATIENT", _compile(
        rf"\b{_FAMILY}[ \t]*[,:(\"-]*[ \t]*(?P<phi>(?!{_NOT_A_NAME}|{_FAMILY}|\w+(?:ed|ing|tion)\b){_NAME})"
        r"[ \t]*[,)\"]?(?=[ \t]*(?:[.;:]|$|(?:in|called|visited|phoned|has|at|here|arrived|came|spent|staying|"
        r"stayed|returned|who|updated|is|was|and)\b))", re.IGNORECASE | re.MULTILINE)),
    Pattern("time_of_day", "DATE", _compile(
        r"(?<![\d/.:])(?P<phi>(?:[01]?\d|2[0-3]):[0-5]\d(?:\s*[ap]\.?m\.?)?|(?:1[0-2]|0?[1-9])\s*[ap]\.?m\.?\b)"),
        default=False),
)
# Look-alikes a tagger takes for dates: number pairs after a ventilator or pressure word ("bipap 10/5",
# "PAP/plateau 22/19"), before a unit or count word ("1/4 strength", "crackles 1/3 up"), and pain scores
# ("pain 5/10"). The cue must sit within 12 characters of the pair: farther, it is as often a date's
# neighbour ("vent via trach (placed 8/14)"). Measured by experiments/tagger_baselines.py (see its results page).
_PAIR = r"(?<![\w/.])\d+(?:\s*/\s*\d+)+(?!\d)"
LOOKALIKES: tuple[Pattern, ...] = (
    Pattern("setting_or_count", "NOT_PHI", _compile(
        rf"(?:\b{_SETTING_WORDS}\b[^\n]{{0,12}}?|\b{_WEAK_SETTING_WORDS}\s*[:=-]?\s*)(?P<phi>{_PAIR})"
        rf"|(?P<phi2>{_PAIR})(?={_NOT_BEFORE_MONTH_DAY.pattern})"), refuses=True),
    Pattern("pain_score", "NOT_PHI", _compile(
        rf"{_PAIN}[^\n]{{0,{CONTEXT}}}?(?<![\w/.])(?P<phi>\d+\s*/\s*10)\b"
        rf"|(?<![\w/.])(?P<phi2>\d+\s*/\s*10)\b(?=[^\n]{{0,{CONTEXT}}}?{_PAIN})"), refuses=True),
)
DEFAULT_PATTERNS: tuple[Pattern, ...] = (*(pattern for pattern in PATTERNS if pattern.default), *LOOKALIKES)

# Spanish clinical cases (MEDDOCAN): dates, contact details and identifiers by their form or the field
# that announces them ("Tfno.:", "Fax:", "NHC:", "NASS:", "NºCol:", "Episodio:", "CP:"), ages after the
# patient ("Varón de 45 años", "Edad: 45 años"). Labels are MEDDOCAN's source types.
_MESES = r"(?:enero|febrero|marzo|abril|mayo|junio|julio|agosto|sept?iembre|octubre|noviembre|diciembre)"
_YEAR = r"(?:19|20)\d\d"
# A telephone number: digits in groups ("913 36 80 00", "93 2607982", "973-727-223", "(5982) 487-3837"),
# an extension ("ext 1530"); a leading "+" stays out, as MEDDOCAN annotates "+34 945007000".
# `_NUMERO.format(group)` names its group.
_NUMERO = (r"\+?\s?(?P<{}>(?:\(\d{{2,5}}\)\s*)?\d{{2,4}}(?:(?:[\s.]|-\s?)?\d{{2,4}}){{1,4}}"
           r"(?:\s*ext\.?\s*\d{{1,5}})?)(?![\d,])")
_NUMERO_LIST = (_NUMERO.format("phi") + rf"(?:\s*(?:[/-]|y)\s*{_NUMERO.format('phi2')})?"
                rf"(?:\s*(?:[/-]|y)\s*{_NUMERO.format('phi3')})?")
_FIELD = r"\s*[:.]?\s*"  # between a field's name and its value: "NHC: ", "Tfno. ", "Episodio:"
_ID = r"[a-z]{0,3}\d+(?:(?: {1,2}|[/-])\d+)*"  # "368503", "26 63514095 35", "28 28 70973", "AB-1234"
_COUNT = r"(?:\d{1,3}|un|una|dos|tres|cuatro|cinco|seis|siete|ocho|nueve|diez|once|doce|trece|catorce|quince)"
_UNIT = r"(?:años?|mes(?:es)?|semanas?|d[ií]as?)"
_AGE = rf"{_COUNT}\s+{_UNIT}(?:\s+y\s+(?:medio|{_COUNT}\s+{_UNIT}))?\b"  # "45 años", "tres años y diez meses"
# Who an age after "de" belongs to: the patient ("Varón de 45 años", "Paciente de sexo femenino de 13 años").
_PERSON = (r"(?:var[oó]n|mujer|hombre|paciente|ni[nñ][oa]|chic[oa]|lactante|neonato|recién\s+nacid[oa]|"
           r"adolescente|joven|anciano|anciana|señora?)(?:\s+(?:var[oó]n|mujer|masculino|femenino|"
           r"de\s+sexo\s+(?:masculino|femenino)))?")
# A relative's age is part of the relative's span ("hermana de 55 años": FAMILIARES_SUJETO_ASISTENCIA).
_RELATIVE = (r"\b(?:padre|madre|herman[oa]s?|t[ií][oa]s?|abuel[oa]s?|hij[oa]s?|prim[oa]s?|sobrin[oa]s?|espos[oa]|"
             r"marido|su\s+mujer|pareja|niet[oa]s?|cónyuge)\b[^.\n]*$")

# The forms (dates, numbers and lines after their field, e-mail) cut a tagger's span to their extent (`Pattern.cuts`):
# the pooled pipeline's spans run on into the next words ("a@b.es Servicio de pediatría").
# A time span, no age: "hace 12 años", "tras 17 meses", "9 años de evolución" (a look-alike, `Pattern.refuses`:
# 1,056 matches on MEDDOCAN train and dev, none touching a gold PHI span).
_DURATION = (rf"\b(?:hace|hac[ií]a|tras|durante|despu[eé]s\s+de|al\s+cabo\s+de|en\s+los\s+(?:[uú]ltimos|primeros))\s+"
             rf"(?:unos?\s+|los\s+)?(?P<phi>{_COUNT}\s+{_UNIT})\b|\b(?P<phi2>{_COUNT}\s+{_UNIT})\s+"
             r"(?:de\s+(?:evoluci[oó]n|seguimiento|tratamiento|ingreso|duraci[oó]n)|despu[eé]s|antes|tras)\b")

# The letterhead's "Domicilio:" and "Localidad/ Provincia:" lines ("Pamplona, Navarra": two places).
_PLACE = r"[^,\n()]*[^,\n()\s.]"
_FIELD_LINE_END = r"[ \t.,)]*$"

SPANISH_PATTERNS: tuple[Pattern, ...] = (
    Pattern("es_date_numeric", "FECHAS", _compile(
        rf"(?<![\w/.,-])(?P<phi>{_DAY}(?P<sep>[/-]){_MONTH}(?P=sep)(?:{_YEAR}|\d\d)|{_DAY}\.{_MONTH}\.{_YEAR}"
        rf"|{_DAY}-{_MESES}-{_YEAR})"
        r"(?![\w/-]|[.,]\d)"), cuts=True),
    Pattern("es_date_text", "FECHAS", _compile(
        rf"\b(?P<phi>{_DAY}\s+de\s+{_MESES}(?:\s+del?\s+(?:año\s+)?{_YEAR})?"
        rf"|(?:{_MESES}\s+y\s+)?{_MESES}\s+(?:del?\s+)?(?:año\s+)?{_YEAR})(?!\d)"),
        # streets, hospitals ("Hospital 12 de Octubre", "C/ 2 de Mayo"), laws ("RD 1299/2006, de 10 de noviembre")
        not_after=_compile(r"(?:\b(?:hospital|universitario|calle|c/|avda\.?|avenida|plaza|paseo|col)\W*"
                           r"|\b(?:rd|real\s+decreto|ley|orden|decreto)\b[^\n]*)$"), cuts=True),
    Pattern("es_phone", "NUMERO_TELEFONO", _compile(
        rf"\b(?:tel[eé]fonos?|telef|telfs?|tel|tfno?s?|tlfn?o?s?|m[oó]vil)\b\.?(?:\s*y\s+fax\b)?{_FIELD}{_NUMERO_LIST}"),
        cuts=True),
    Pattern("es_fax", "NUMERO_FAX", _compile(rf"\bfax\b\.?{_FIELD}{_NUMERO.format('phi')}"),
            not_after=_compile(r"\by\s+fax\W*$"), cuts=True),  # "Tel. y Fax: ...": a telephone
    Pattern("es_email", "CORREO_ELECTRONICO", _EMAIL, cuts=True),
    Pattern("es_url", "URL_WEB", _URL, default=False),  # MEDDOCAN's only URL (train) is a public site, no PHI
    Pattern("es_medical_record", "ID_SUJETO_ASISTENCIA", _compile(
        rf"\b(?:nhc|cipa?|n[ºo°]\.?\s*(?:de\s+)?historia(?:\s+cl[ií]nica)?|historia\s+cl[ií]nica\s+n[ºo°]\.?|"
        rf"dni|nie){_FIELD}(?:nhc-)?(?P<phi>{_ID})\b"), cuts=True),
    Pattern("es_social_security", "ID_ASEGURAMIENTO", _compile(
        rf"\b(?:nass|nss|n[ºo°]\.?\s*(?:de\s+)?(?:afiliación\s+a\s+)?(?:la\s+)?seguridad\s+social){_FIELD}"
        rf"(?P<phi>{_ID})\b"), cuts=True),
    Pattern("es_licence", "ID_TITULACION_PERSONAL_SANITARIO", _compile(
        rf"\b(?:n[ºo°]\.?\s*(?:de\s+)?col(?:egiad[oa])?\.?|colegiad[oa]\s+n[ºo°]\.?){_FIELD}(?P<phi>{_ID})\b"),
        cuts=True),
    Pattern("es_episode", "ID_CONTACTO_ASISTENCIAL", _compile(rf"\bepisodio\s*:\s*(?P<phi>{_ID})\b"), cuts=True),
    Pattern("es_age", "EDAD_SUJETO_ASISTENCIA", _compile(
        rf"^[ \t]*edad\s*:\s*(?P<phi>{_AGE}|\d{{1,3}}(?:\s+a\b)?)|\b{_PERSON},?\s+de\s+(?P<phi2>{_AGE})"
        rf"|(?P<phi3>{_AGE})\s+de\s+edad", re.IGNORECASE | re.MULTILINE), not_after=_compile(_RELATIVE)),
    Pattern("es_postal_code", "TERRITORIO", _compile(rf"\b(?:c\.\s?p\.|cp|código\s+postal){_FIELD}(?P<phi>\d{{5}})\b"),
            cuts=True),
    Pattern("es_sex", "SEXO_SUJETO_ASISTENCIA", _compile(r"\bsexo\s*:\s*(?P<phi>[a-z]+)\b")),
    Pattern("es_address", "CALLE", _compile(rf"^[ \t]*domicilio\s*:[ \t]*(?P<phi>[^\n]*?[^\s.,]){_FIELD_LINE_END}",
                                            re.IGNORECASE | re.MULTILINE), cuts=True),
    Pattern("es_locality", "TERRITORIO", _compile(
        rf"^[ \t]*localidad\s*/\s*provincia\s*:[ \t]*(?P<phi>{_PLACE})(?:\s*[,(]\s*(?P<phi2>{_PLACE}))?"
        rf"(?:\s*[,(]\s*(?P<phi3>{_PLACE}))?{_FIELD_LINE_END}", re.IGNORECASE | re.MULTILINE), cuts=True),
    Pattern("es_duration", "NOT_PHI", _compile(_DURATION), refuses=True),
    # a public list, deferring to the tagger (a list's "Granada" may be a city or a surname)
    Pattern("es_country", "PAIS", word_alternation(country_names("es")), defers=True, relabels="TERRITORIO"),
    Pattern("es_city", "TERRITORIO", CompiledOnFirstUse(lambda: word_alternation(place_names("es"))), defers=True),
)
# language -> its patterns (look-alikes included)
LANGUAGES: dict[str, tuple[Pattern, ...]] = {"en": (*PATTERNS, *LOOKALIKES), "es": SPANISH_PATTERNS}
BY_NAME = {pattern.name: pattern for patterns in LANGUAGES.values() for pattern in patterns}


def patterns_for(language: str = "en", labels: Sequence[str] = ()) -> tuple[Pattern, ...]:
    """The default patterns for notes in `language` (a key of `LANGUAGES`; ValueError naming any
    other), each labelled as the tag set `labels` (a pipeline's span labels) names its i2b2 type
    (`tag_set_label`, no category fallback: an "EMAIL" stays one in a tag set without e-mail);
    without `labels`, the patterns' own labels."""
    if language not in LANGUAGES:
        raise ValueError(f"the pattern layer knows no language {language!r}; known: {', '.join(LANGUAGES)}")
    def renamed(label: str | None) -> str | None:
        return label and tag_set_label(label, labels, by_category=False)

    return tuple(replace(pattern, label=renamed(pattern.label), relabels=renamed(pattern.relabels))
                 for pattern in LANGUAGES[language] if pattern.default)


def tag_set_label(label: str, labels: Sequence[str], *, by_category: bool = True) -> str:
    """`label` as a tag set of `labels` names it: itself when there, else the first of `labels`
    of its i2b2 type (a pattern's "DOCTOR" is PhysioNet's "HCPName", "FECHAS" an i2b2 tagger's
    "DATE"), else (`by_category`) of its category, else itself."""
    phi = PHI_TYPES.get(label)
    if label in labels or phi is None:
        return label
    known = [PHI_TYPES[other] for other in labels if other in PHI_TYPES]
    same_category = (other.source_type for other in known if by_category and other.category == phi.category)
    return next((other.source_type for other in known if other.type == phi.type), next(same_category, label))


def find_patterns(text: str, patterns: Sequence[Pattern] = DEFAULT_PATTERNS) -> tuple[Span, ...]:
    """The spans every pattern finds in `text` (look-alikes aside), overlapping ones joined as
    `merge_spans` joins them."""
    return merge_spans((), [span for pattern in patterns if not pattern.refuses for span in pattern.spans(text)], text)


def merge_spans(tagger_spans: Iterable[Span], pattern_spans: Iterable[Span], text: str) -> tuple[Span, ...]:
    """The union of the tagger's and the patterns' spans over `text`, with no overlaps: each run of
    overlapping spans becomes one span over their joined extent, labelled like its longest member
    (a pattern span winning ties, then the earliest). Spans that only touch stay apart."""
    ranked = [(span, 1) for span in pattern_spans] + [(span, 0) for span in tagger_spans]
    ranked.sort(key=lambda item: (item[0].start, item[0].end))
    merged: list[Span] = []
    run: list[tuple[Span, int]] = []

    def close() -> None:
        if not run:
            return
        start, end = run[0][0].start, max(span.end for span, _ in run)
        if len(run) == 1:
            merged.append(run[0][0])
        else:
            label = max(run, key=lambda item: (item[0].end - item[0].start, item[1], -item[0].start))[0].source_type
            merged.append(Span(start, end, label, text[start:end]))
        run.clear()

    for item in ranked:
        if run and item[0].start >= max(span.end for span, _ in run):
            close()
        run.append(item)
    close()
    return tuple(merged)


def with_patterns(document: Document, patterns: Sequence[Pattern] = DEFAULT_PATTERNS) -> Document:
    """`document` with its spans (the tagger's) merged with the patterns' spans in its text, less
    the tagger spans that lie inside a look-alike (`Pattern.refuses`) and the spans of deferring
    patterns (`Pattern.defers`) that overlap a tagger span kept; the tagger spans' labels decided
    by the closed lists (`Pattern.relabels`) and cut by the spans of cutting patterns (`Pattern.cuts`)."""
    found: list[Span] = []
    refused: list[Span] = []
    deferring: list[Span] = []
    cutting: list[Span] = []
    for pattern in patterns:
        role = refused if pattern.refuses else deferring if pattern.defers else cutting if pattern.cuts else found
        role.extend(pattern.spans(document.text))
    kept = [piece for span in document.spans
            if not any(other.start <= span.start and span.end <= other.end for other in refused)
            for piece in _cut(_relabelled(span, patterns), cutting, document.text)]
    found += cutting
    found += [span for span in deferring
              if not any(span.start < other.end and other.start < span.end for other in kept)]
    return Document(document.id, document.text, merge_spans(kept, found, document.text))


def _relabelled(span: Span, patterns: Sequence[Pattern]) -> Span:
    """`span` relabelled by the first closed list (`Pattern.relabels`) of its label that lacks its text."""
    for pattern in patterns:
        if pattern.relabels and span.source_type == pattern.label and not pattern.regex.fullmatch(span.text):
            return replace(span, source_type=pattern.relabels)
    return span


def _cut(span: Span, cutting: Sequence[Span], text: str) -> Iterator[Span]:
    """The parts of `span` outside the `cutting` spans that hold a letter or digit, without the
    whitespace at their edges."""
    pieces = [(span.start, span.end)]
    for cut in cutting:
        pieces = [(start, end) for piece_start, piece_end in pieces
                  for start, end in ((piece_start, min(piece_end, cut.start)), (max(piece_start, cut.end), piece_end))
                  if start < end]
    if pieces == [(span.start, span.end)]:
        yield span
        return
    for start, end in pieces:
        part = text[start:end]
        if any(character.isalnum() for character in part):
            start, end = start + len(part) - len(part.lstrip()), end - len(part) + len(part.rstrip())
            yield replace(span, start=start, end=end, text=text[start:end])
