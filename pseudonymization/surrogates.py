"""The "surrogates" pseudonymization scheme (docs/privacy.md): a PHI token's replacement is a
draw that does not depend on which original it replaces, only on the span's label (its PHI
type), the language and the token's visible shape, so that the best attacker's success is its
prior's best guess within the originals of that shape (`deidpool.pseudonymization.bound`).

A gold span (consecutive tokens of one label, `phi_spans`) is replaced as a whole, each token by
its kind (`token_kind`):
- the language's `FUNCTION_WORDS`, in lower case inside the span, stay ("3 de marzo de 2018");
- the other words, place words included ("Hospital", "Calle"), are filled in order by the words
  of one value of the span's type with as many words (`matched_values`), drawn uniformly from a
  `pool` made once from the language's Faker locale with a fixed seed, or by values laid end to
  end when the pool has too few of that length; each takes the casing shape of the word it
  replaces;
- numbers (ASCII digits) take a uniform draw from the numbers of their shape (`number_shape`);
- other tokens keep their character classes (a random letter of its case for each letter, a
  random digit for each digit).
A surrogate equal to the original (case-insensitive), but a place word (`PLACE_WORDS`), is drawn
again (a word of a matched value alone, a span of values laid end to end all together), which
tells an attacker only that the original was not the surrogate. Draws come from the caller's
`random.Random` alone."""

from __future__ import annotations

import itertools
import random
import string
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from operator import methodcaller

from faker import Faker

from deidpool.corpus.categories import PHI_TYPES
from deidpool.corpus.gazetteers import place_names
from deidpool.corpus.tokenize import tokenize
from deidpool.pseudonymization.pseudonymize import NumberCandidates, is_age, same_casing

LOCALES = {"en": "en_US", "es": "es_ES"}
POOL_DRAWS = 2000  # Faker values made for a pool (its distinct ones are kept)
POOL_SEED = 0
MATCHED_MINIMUM = 5  # the fewest values of one word count that fill a span of that count on their own

FUNCTION_WORDS = {"es": frozenset({"de", "del", "la", "las", "el", "los", "y", "al", "en"}),
                  "en": frozenset({"of", "the", "and", "at", "on", "in"})}
"""The words kept inside a span (`span_kinds`): prepositions, articles and conjunctions that join
the parts of a date, address or name ("3 de marzo de 2018", "Calle de la Princesa", "María de
los Ángeles", "Bank of America"). They name no one and tell nothing of the original beyond its
structure (a day, month and year; a street type and name), and a tagger trained on surrogates
sees them inside spans as real text has them. Only in lower case and between two tokens with a
letter or a digit: capitalized or in capitals they may be an abbreviation ("IN", Indiana) or a
name's first word ("De la Cruz"), next to punctuation a piece of an e-mail address
("maria_en_correa"). The single letters "a" and "e" are left out: in MEDDOCAN they are also
ordinals and abbreviations ("Cra. 8 a", "M. a Teresa")."""

PLACE_WORDS = {
    "es": {"HOSPITAL": frozenset({"hospital", "clínica", "clínico", "complejo", "hospitalario", "universitario",
                                  "centro", "salud", "general", "regional", "comarcal", "provincial", "san", "santa",
                                  "virgen", "nuestra", "señora", "infantil", "materno", "sanatorio", "policlínica"}),
           "STREET": frozenset({"calle", "c", "avenida", "avda", "av", "pasadizo", "plaza", "pza", "paseo", "pº",
                                "carretera", "ctra", "camino", "ronda", "travesía", "urbanización", "urb",
                                "glorieta", "pasaje", "rambla", "alameda", "vía", "via", "vial", "callejón", "cañada",
                                "acceso", "cuesta", "barrio", "piso", "puerta", "portal", "bajo", "izquierda",
                                "derecha", "izq", "dcha", "san", "santa", "doctor", "dr", "nº", "número"}),
           "ORGANIZATION": frozenset({"instituto", "facultad", "medicina", "servicio", "universidad", "fundación",
                                      "departamento", "asociación", "sociedad", "colegio", "consejería", "ministerio",
                                      "sanidad", "unidad", "laboratorio", "centro", "investigación", "salud"})},
    "en": {"HOSPITAL": frozenset({"hospital", "medical", "center", "centre", "clinic", "health", "general"}),
           "STREET": frozenset({"street", "st", "avenue", "ave", "road", "rd", "boulevard", "blvd", "drive", "dr",
                                "lane", "ln", "way", "court", "ct", "place", "pl", "square", "sq", "apt", "suite"})},
}
"""Words that say which kind of place a HOSPITAL, STREET or ORGANIZATION span names rather than
which one ("Hospital", "Universitario", "Calle", "Avda", "piso", "Instituto"; in Spanish also the
"San", "Virgen" or "Doctor" places are named after). They are drawn like every other word, from the
values of the span's kind, but without the redraw: a place word's surrogate does not depend on it
at all, so it may come out equal by chance ("Hospital" for "Hospital", as often as the pool starts
a value with it) and says nothing of the original either way. Redrawn, "Hospital" could never
stay "Hospital", every hospital of the training notes would begin with another kind of place, and
a tagger trained on them would miss real ones (docs/privacy.md)."""


def kept_words(language: str) -> frozenset[str]:
    """Every word a span of `language` may keep as it is (case-folded): its FUNCTION_WORDS."""
    return FUNCTION_WORDS[language]


_HOSPITALS = {"en": ("{} Hospital", "{} Medical Center", "{} Clinic", "{} General Hospital", "Saint {} Hospital"),
              "es": ("Hospital {}", "Clínica {}", "Centro de Salud {}", "Hospital Universitario {}",
                     "Complejo Hospitalario {}", "Hospital San {}", "Hospital Universitario Virgen de {}")}
# The forms Spanish notes name streets and organisations in beside Faker's own (streets after saints
# and doctors, "Avda. Dr. Esquerdo"; institutes, faculties and services, "Facultad de Medicina de X").
_STREETS_ES = ("Calle San {}", "Avenida Doctor {}", "Calle Doctor {}")
_ORGANIZATIONS_ES = ("Instituto {}", "Facultad de Medicina de {}", "Servicio de Salud de {}", "Universidad de {}",
                     "Fundación {}", "Instituto de Investigación {}")
_RELATIVES = {"en": ("mother", "father", "brother", "sister", "son", "daughter", "wife", "husband", "family",
                     "parents", "aunt", "uncle", "cousin", "partner", "grandmother", "grandfather"),
              "es": ("madre", "padre", "hermano", "hermana", "hijo", "hija", "abuelo", "abuela", "tío", "tía",
                     "primo", "prima", "pareja", "esposo", "esposa", "marido", "familia", "padres", "hijos",
                     "hermanos", "sobrino", "sobrina", "nieto", "nieta", "suegra", "cuñado", "tío materno",
                     "abuela paterna", "primo hermano", "hermano mayor", "hija menor", "prima materna")}
_SEXES = {"en": ("male", "female", "man", "woman"), "es": ("varón", "mujer", "hombre", "femenino", "masculino")}
_AGE_UNITS = {"en": ("years", "months", "weeks", "days"), "es": ("años", "meses", "semanas", "días")}


def _name(faker: Faker) -> str:
    """A name in one of the forms notes write it: a first name, a surname, or both (in Spanish
    also with two surnames, or the two surnames alone)."""
    first, surname, second = faker.first_name(), faker.last_name(), faker.last_name()
    forms = [first, surname, f"{first} {surname}"]
    if faker.locales[0].startswith("es"):
        forms += [f"{first} {surname} {second}", f"{surname} {second}"]
    return faker.random_element(forms)


def _city(faker: Faker) -> str:
    """A city; in English a real one (GeoNames' US cities, `deidpool.corpus.gazetteers`): Faker's
    en_US cities are made up ("Williamshaven"), many of their words unknown to GloVe, where real
    notes' location words mostly are known to it."""
    if faker.locales[0].startswith("en"):
        return faker.random_element(place_names("en"))
    return faker.city()


def _hospital(faker: Faker) -> str:
    patterns = _HOSPITALS[faker.locales[0][:2]]
    return faker.random_element(patterns).format(faker.random_element((faker.last_name(), _city(faker),
                                                                       faker.first_name())))


def _initials(faker: Faker) -> str:
    """A hospital's or a company's initials, as notes abbreviate them ("GH", "VAMC", "GBMC")."""
    name = _hospital(faker) if faker.random_int(0, 1) else faker.company()
    return "".join(word[0] for word in name.split() if word[0].isalpha()).upper()


def _place(faker: Faker) -> str:
    """What a corpus lumps under one location label (PhysioNet `Location`, i2b2 2006 `LOCATION`):
    mostly hospitals, by name or initials, then cities and companies, so that a tagger trained on
    the surrogates sees locations like the real ones (measured by experiments/type_breakdown.py;
    see its results page)."""
    generator = faker.random_element((_hospital, _hospital, _initials, _city, methodcaller("company")))
    return generator(faker)


def _street(faker: Faker) -> str:
    """A street name as Faker's locale writes it, or (Spanish) after a saint or a doctor."""
    if not faker.locales[0].startswith("es") or faker.random_int(0, 2):
        return faker.street_name()
    return faker.random_element(_STREETS_ES).format(faker.random_element((faker.first_name(), faker.last_name())))


def _organization(faker: Faker) -> str:
    """A company (Faker), or (Spanish) an institute, faculty, service, university or foundation."""
    if not faker.locales[0].startswith("es") or not faker.random_int(0, 2):
        return faker.company()
    return faker.random_element(_ORGANIZATIONS_ES).format(faker.random_element((faker.city(), faker.last_name())))


def _relative(faker: Faker) -> str:
    """A relative as notes name one by role ("su madre", "la familia")."""
    return faker.random_element(_RELATIVES[faker.locales[0][:2]])


def _email(faker: Faker) -> str:
    """An address at a free mail provider under one of the common top-level domains (a single
    one would leave the original's "com" no other surrogate)."""
    return f"{faker.user_name()}@{faker.free_email_domain().partition('.')[0]}.{faker.tld()}"


def _sex(faker: Faker) -> str:
    return faker.random_element(_SEXES[faker.locales[0][:2]])


def _age_unit(faker: Faker) -> str:
    """The word of an age span ("70 años")."""
    return faker.random_element(_AGE_UNITS[faker.locales[0][:2]])


GENERATORS: dict[str, Callable[[Faker], str]] = {
    "PATIENT": _name, "DOCTOR": _name, "USERNAME": methodcaller("user_name"),
    "EMAIL": _email, "STREET": _street, "CITY": _city, "RELATIVE": _relative,
    "LOCATION-OTHER": _place, "STATE": methodcaller("state"), "COUNTRY": methodcaller("country"),
    "HOSPITAL": _hospital,
    "ORGANIZATION": _organization, "DEPARTMENT": methodcaller("company"), "PROFESSION": methodcaller("job"),
    "DATE": lambda faker: faker.random_element((faker.month_name(), faker.day_of_week())),
    "AGE": _age_unit, "SEX": _sex, "OTHER": methodcaller("word"),
}
"""By kind (`generator_kind`), what a value of the pool is made from."""
_LABEL_KINDS = {"SEXO_SUJETO_ASISTENCIA": "SEX", "FAMILIARES_SUJETO_ASISTENCIA": "RELATIVE", "NAME": "PATIENT",
                "LOCATION": "LOCATION-OTHER"}
"""Labels whose kind is not their PHI type's: types more specific than MEDDOCAN's OTHER and PATIENT
(its relatives are mostly named by role: "madre", "familia", "pareja"), and i2b2 categories used as
labels."""


def generator_kind(label: str | None) -> str:
    """The key of GENERATORS that a span of tag label `label` draws its words from: its own
    (`_LABEL_KINDS`), else its PHI type's (`deidpool.corpus.categories`), else OTHER."""
    if label in _LABEL_KINDS:
        return _LABEL_KINDS[label]
    kind = PHI_TYPES[label].type if label in PHI_TYPES else label
    return kind if kind in GENERATORS else "OTHER"


def check_language(language: str) -> str:
    if language not in LOCALES:
        raise ValueError(f"no surrogates for language {language!r}; choose one of: {', '.join(LOCALES)}")
    return language


@lru_cache(maxsize=None)
def pool(language: str, kind: str) -> tuple[tuple[str, ...], ...]:
    """The distinct values of `kind` in `language` as their words (tokens of two letters or
    more but the language's FUNCTION_WORDS in lower case: a span keeps its own), from POOL_DRAWS
    values of a Faker seeded with POOL_SEED: the same on every call."""
    faker = Faker(LOCALES[check_language(language)])
    faker.seed_instance(POOL_SEED)
    values = (tuple(token.text for token in tokenize(GENERATORS[kind](faker))
                    if token_kind(token.text) == "word" and token.text not in FUNCTION_WORDS[language])
              for _ in range(POOL_DRAWS))
    return tuple(dict.fromkeys(value for value in values if value))


@lru_cache(maxsize=None)
def matched_values(language: str, kind: str, count: int) -> tuple[tuple[str, ...], ...] | None:
    """The values of `pool` with `count` words, which fill a span of `count` word positions on
    their own; None (values laid end to end) when there are fewer than MATCHED_MINIMUM of them
    or they have fewer than three words at one position (an audit's pair avoids two there)."""
    values = tuple(value for value in pool(language, kind) if len(value) == count)
    if len(values) < MATCHED_MINIMUM or any(len({value[i].casefold() for value in values}) < 3
                                            for i in range(count)):
        return None
    return values


@lru_cache(maxsize=None)
def word_distribution(language: str, kind: str, index: int, count: int) -> dict[str, float]:
    """The probability of each word (case-folded) at word position `index` of a span of `kind`
    with `count` word positions, before the redraw. Matched values (`matched_values`): the share
    of them with that word at `index`. Else the values are uniform draws from `pool`, laid end to
    end: a value starts at position i with probability start[i] (start[0] = 1, start[i] = sum over
    l of start[i - l] * P(a value has l words)), and the word at `index` is word index - i of the
    value that starts at i and is long enough."""
    matched = matched_values(language, kind, count)
    if matched:
        shares: Counter = Counter(value[index].casefold() for value in matched)
        return {word: n / len(matched) for word, n in shares.items()}
    values = pool(language, kind)
    lengths = Counter(len(value) for value in values)
    start = [1.0]
    for i in range(1, index + 1):
        start.append(sum(start[i - length] * count for length, count in lengths.items() if length <= i) / len(values))
    found: Counter = Counter()
    for i in range(index + 1):
        for value in values:
            if len(value) > index - i:
                found[value[index - i].casefold()] += start[i] / len(values)
    if max(found.values()) >= 1:
        raise ValueError(f"the {kind} surrogates of {language!r} have one word only at position {index}")
    return dict(found)


YEARS = range(1900, 2100)
"""The years a date's four-digit number in them draws from (`number_shape`). By shape alone "2018"
would become any of 1000..9999, mostly no year at all: the surrogate would read as none, and a
tagger trained on such exports would learn dates whose year is "6734". Two centuries hold the years
notes name (births from 1900; every four-digit MEDDOCAN train date number), so drawing from all of
them says of the original only that it was a year, which a date's four-digit number nearly always
is; twenty-year blocks around the original (the earlier rule) said which twenty years."""
_AGE_STARTS = (0, 90, 120)  # an age's ranges: 0..89, 90..119 (over 89: HIPAA), 120 and over (no age)
_YEAR_STARTS = (0, YEARS.start, YEARS.stop)


def _is_date(label: str | None) -> bool:
    """Whether the PHI label `label` of any corpus ("DATE", "FECHAS", "DateYear") is a date."""
    entry = PHI_TYPES.get(label or "")
    return entry is not None and entry.type == "DATE"


def number_shape(word: str, label: str | None = None) -> NumberCandidates:
    """The numbers the number `word` (ASCII digits) of tag label `label` draws its surrogate from,
    uniformly (the original itself drawn again): every number of its shape, i.e. of its digit count
    and, beyond one digit, starting with "0" or not ("7" -> 0..9, "03" -> 00..09, "11" -> 10..99),
    whatever its value, within the range that holds it where the label's i2b2 type needs one: an age
    (`is_age`) keeps its side of 89 (0..89, 90..119, 120 and over), a date's four-digit number
    its side of `YEARS`. Two numbers of one shape and range have the same set; every set has ten
    numbers or more."""
    width, value = len(word), int(word)
    padded = width > 1 and word.startswith("0")
    low = 0 if width == 1 or padded else 10 ** (width - 1)
    high = 10 ** (width - 1) if padded else 10 ** width
    starts = _AGE_STARTS if is_age(label) else _YEAR_STARTS if _is_date(label) and width == 4 else (0,)
    at = bisect_right(starts, value) - 1
    stop = starts[at + 1] if at + 1 < len(starts) else high
    return NumberCandidates(range(max(low, starts[at]), min(high, stop)), width)


def token_kind(word: str) -> str | None:
    """"number" (ASCII digits), "word" (two letters or more), "chars" (any other token with a
    letter or digit) or None (punctuation: kept)."""
    if word.isascii() and word.isdigit():
        return "number"
    if word.isalpha() and len(word) > 1:
        return "word"
    return "chars" if any(c.isalnum() for c in word) else None


def character_classes(word: str) -> str:
    """`word`'s pattern: "A" for an upper-case letter, "a" for another letter, "9" for a digit,
    other characters as they are ("AB-12x" -> "AA-99a")."""
    return "".join("A" if c.isupper() else "a" if c.isalpha() else "9" if c.isnumeric() else c for c in word)


_CLASS_CHARACTERS = {"A": string.ascii_uppercase, "a": string.ascii_lowercase, "9": string.digits}


def pattern_size(pattern: str) -> int:
    """How many tokens have the character classes `pattern`."""
    size = 1
    for c in pattern:
        size *= len(_CLASS_CHARACTERS.get(c, "x"))
    return size


def pattern_tokens(pattern: str) -> list[str]:
    """Every token of the character classes `pattern`."""
    return ["".join(chars) for chars in itertools.product(*(_CLASS_CHARACTERS.get(c, c) for c in pattern))]


def phi_spans(tags: Sequence[str]) -> list[range]:
    """The token positions of each PHI span of a BIO/BIOES tag sequence: a span starts at "B-",
    "S-", a change of label or after "O", "E-" or "S-"."""
    spans: list[range] = []
    previous = "O"
    for position, tag in enumerate(tags):
        if tag != "O":
            prefix, _, label = tag.partition("-")
            before, _, before_label = previous.partition("-")
            if prefix in ("B", "S") or before in ("O", "E", "S") or label != before_label:
                spans.append(range(position, position + 1))
            else:
                spans[-1] = range(spans[-1].start, position + 1)
        previous = tag
    return spans


def span_kinds(words: Sequence[str], language: str) -> list[str | None]:
    """Each token's kind in a span of `words` as its draw treats it: "kept" for one of the
    language's FUNCTION_WORDS as written (lower case) between two tokens with a letter or a digit
    (it joins two parts of the span), else its `token_kind`."""
    kinds = [token_kind(word) for word in words]
    return ["kept" if kinds[i] and word in FUNCTION_WORDS[language] and 0 < i < len(words) - 1
            and kinds[i - 1] and kinds[i + 1] else kinds[i] for i, word in enumerate(words)]


def token_shape(words: Sequence[str], position: int, label: str | None, language: str) -> tuple | None:
    """What the draw for `words[position]` (in a span of `words`, tag label `label`, in
    `language`) depends on besides the label and the language, and its position: (kind, ...,
    position in the span, span length), None for punctuation. A kept word (`span_kinds`): itself
    ("kept", exported as it is); another word: its index among the words filled from the pool and
    its casing shape and how many words the span fills; a number: its `number_shape`; another token: its
    character classes. Originals of one shape draw alike."""
    kinds = span_kinds(words, language)
    word, kind = words[position], kinds[position]
    where = (position, len(words))
    if kind == "kept":
        return ("kept", word, *where)
    if kind == "word":
        return ("word", kinds[:position].count("word"), same_casing("ab", word), kinds.count("word"), *where)
    if kind == "number":
        numbers = number_shape(word, label)
        return ("number", numbers.width, numbers.values.start, numbers.values.stop, *where)
    return None if kind is None else ("chars", character_classes(word), *where)


def span_surrogates(words: Sequence[str], label: str | None, language: str, rng: random.Random,
                    also_not: Sequence[str | None] | None = None) -> list[str]:
    """The surrogates of the tokens `words` of one span of tag label `label` (module docstring);
    each differs from its own word and, where `also_not` names one, from that word too (an audit's
    pair: both exports then avoid both candidates, see `deidpool.adversary.pairs.PairSource.draw`),
    but a place word (`PLACE_WORDS`), drawn whatever it was."""
    generator = generator_kind(label)
    kinds = span_kinds(words, check_language(language))
    places = PLACE_WORDS[language].get(generator, frozenset())
    avoided = [set() if word.casefold() in places else {word.casefold(), *([other.casefold()] if other else [])}
               for word, other in zip(words, also_not or [None] * len(words))]
    result = list(words)
    positions = [i for i, kind in enumerate(kinds) if kind == "word"]
    if positions:
        drawn = _span_words([avoided[i] for i in positions], generator, language, rng)
        for new, i in zip(drawn, positions):
            result[i] = same_casing(new.lower(), words[i])
    for i, kind in enumerate(kinds):
        if kind == "number":
            numbers = number_shape(words[i], label)
            result[i] = _other(avoided[i], lambda: numbers[rng.randrange(len(numbers))])
        elif kind == "chars":
            result[i] = _other(avoided[i], lambda: "".join(
                rng.choice(_CLASS_CHARACTERS[c]) if c in _CLASS_CHARACTERS else c
                for c in character_classes(words[i])))
    return result


def _span_words(avoided: list[set[str]], kind: str, language: str, rng: random.Random) -> list[str]:
    """The words that fill a span's word positions (module docstring), none of them one of the
    case-folded words `avoided` at its position."""
    matched = matched_values(language, kind, len(avoided))
    if matched:
        drawn = list(rng.choice(matched))
        return [_other(avoid, lambda: rng.choice(matched)[i]) if new.casefold() in avoid else new
                for i, (new, avoid) in enumerate(zip(drawn, avoided))]
    values = pool(language, kind)
    while True:
        drawn = []
        while len(drawn) < len(avoided):
            drawn += rng.choice(values)
        if all(new.casefold() not in avoid for new, avoid in zip(drawn, avoided)):
            return drawn[:len(avoided)]


def _other(avoided: set[str], draw: Callable[[], str]) -> str:
    """A `draw()` none of `avoided` (case-folded words)."""
    while (drawn := draw()).casefold() in avoided:
        pass
    return drawn
