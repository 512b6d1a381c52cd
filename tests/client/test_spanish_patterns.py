"""Tests of the Spanish pattern layer (MEDDOCAN's clinical cases): each pattern on hand-written PHI
with the offsets MEDDOCAN annotates and on the look-alikes found on its training notes; the layer
chosen by language and labelled in a pipeline's tag set."""

import pytest

from deidpool.client.patterns import (
    BY_NAME,
    DEFAULT_PATTERNS,
    LANGUAGES,
    SPANISH_PATTERNS,
    CompiledOnFirstUse,
    find_patterns,
    patterns_for,
    with_patterns,
    word_alternation,
)
from deidpool.corpus.categories import PHI_TYPES
from deidpool.corpus.document import Document, Span
from deidpool.corpus.gazetteers import country_names, place_names

# (pattern, text, the PHI it must find, in order)
POSITIVES = [
    ("es_date_numeric", "Fecha de Ingreso: 12/12/2016.\n", ["12/12/2016"]),
    ("es_date_numeric", "intervenido el 15-02-07, el 9/05/05 y el 1.6.2010", ["15-02-07", "9/05/05", "1.6.2010"]),
    ("es_date_numeric", "Fecha de nacimiento: 23-octubre-1972.", ["23-octubre-1972"]),
    ("es_date_text", "ingresó el 3 de marzo de 2018 por disnea", ["3 de marzo de 2018"]),
    ("es_date_text", "En Febrero de 1998 y en noviembre del 2001", ["Febrero de 1998", "noviembre del 2001"]),
    ("es_date_text", "En enero del año 2001, abril 2006 y el 25 de agosto", ["enero del año 2001", "abril 2006",
                                                                            "25 de agosto"]),
    ("es_date_text", "En febrero y abril de 2002 acude", ["febrero y abril de 2002"]),
    ("es_phone", "08009, Barcelona Tlf. 609 518571 / Fax 93 2607982", ["609 518571"]),
    ("es_phone", "Telfs.: 918823884 / 918823984 / 619128686. Correo", ["918823884", "918823984", "619128686"]),
    ("es_phone", "Cádiz. Tfno: 956 203 145 y 956 203 146.\n", ["956 203 145", "956 203 146"]),
    ("es_phone", "Vigo. Tfno: 986413144 ext 1530 - Fax: 986421439", ["986413144 ext 1530"]),
    ("es_phone", "Álava. España Tfno.+34 945007000 Fax", ["34 945007000"]),
    ("es_phone", "46017 - Valencia Tel. y Fax: 961 622 403 E-mail", ["961 622 403"]),
    ("es_fax", "08009, Barcelona Tlf. 609 518571 / Fax 93 2607982 E-mail", ["93 2607982"]),
    ("es_fax", "Oviedo. Fax: 985-27-36-14. e-mail", ["985-27-36-14"]),
    ("es_email", "Correo electrónico: juan.perez_83@hotmail.com\n", ["juan.perez_83@hotmail.com"]),
    ("es_url", "su blog personal www.ejemplo-paciente.es/diario.", ["www.ejemplo-paciente.es/diario"]),
    ("es_medical_record", "Apellidos: Rivera Bueno.\nNHC: 368503.\nNASS: 26", ["368503"]),
    ("es_medical_record", "CIPA: nhc-150679.\n", ["150679"]),
    ("es_medical_record", "Nº historia clínica: 4387459; DNI: 12345678", ["4387459", "12345678"]),
    ("es_social_security", "NHC: 368503.\nNASS: 26 63514095 35.\nDomicilio", ["26 63514095 35"]),
    ("es_social_security", "Nº de la Seguridad Social: 28/12345678/90", ["28/12345678/90"]),
    ("es_licence", "Médico: Ignacio Navarro Cuéllar NºCol: 28 28 70973.\n", ["28 28 70973"]),
    ("es_licence", "Dra. Ruiz, colegiada nº 46/03/15574.", ["46/03/15574"]),
    ("es_episode", "Servicio: Urgencias.\nEpisodio: 403785669.\nMédico", ["403785669"]),
    ("es_age", "País: España.\nEdad: 70 años Sexo: H.", ["70 años"]),
    ("es_age", "País: España.\nEdad: 35 A Sexo: H.", ["35 A"]),
    ("es_age", "Informe clínico: Varón de 44 años ingresado por", ["44 años"]),
    ("es_age", "Paciente de sexo femenino de 13 años y 7 meses de edad", ["13 años y 7 meses"]),
    ("es_age", "Niña de tres años y diez meses que consulta", ["tres años y diez meses"]),
    ("es_age", "A los 18 meses de edad reingresa", ["18 meses"]),
    ("es_postal_code", "Localidad/ Provincia: Madrid.\nCP: 28016.\n", ["28016"]),
    ("es_postal_code", "Avda. Martín Lagos, s/n C.P. 28045 - Madrid", ["28045"]),
    ("es_sex", "Edad: 70 años Sexo: H.\n", ["H"]),
    ("es_address", "NHC: 368503.\nDomicilio: C/ Cobre, 5, 3, Izq.\nLocalidad/ Provincia: Madrid.",
     ["C/ Cobre, 5, 3, Izq"]),
    ("es_locality", "Domicilio: Calle Real 234.\nLocalidad/ Provincia: Pamplona, Navarra.\nCP: 31008.",
     ["Pamplona", "Navarra"]),
    ("es_locality", "Localidad/ Provincia: Puerto de Santa María (Cádiz)\n", ["Puerto de Santa María", "Cádiz"]),
    ("es_duration", "Operada hace 12 años; tras 17 meses de tratamiento, 9 años de evolución",
     ["12 años", "17 meses", "9 años"]),
    ("es_country", "Natural de Marruecos, reside en España desde 2001", ["Marruecos", "España"]),
    ("es_country", "Houston, TX 77030, EE.UU. y Londres, Reino Unido.", ["EE.UU.", "Reino Unido"]),
    ("es_city", "Remitido desde Soria a Donostia; natural de Cretas", ["Soria", "Donostia"]),  # Cretas: < 15,000
]

# Look-alikes on MEDDOCAN's training notes that no default Spanish pattern may take.
TRAPS = [
    "Hospital Universitario \"12 de Octubre\" (HU12O), en la avenida",  # a city is PHI: the street's left out
    "según el RD 1299/2006, de 10 de noviembre, por el que se aprueba",
    "PSA de 1.16 ng/ml; 4 hematíes/campo y 0-5 leucocitos/campo; TA 120/80; grado I/IV",
    "diabetes de 20 años de evolución; hace 2 años; a los 2 años del trasplante",
    "Padre fallecido a los 65 años de edad. Hermana de 55 años de edad con nefropatía.",
    "vive con su mujer invidente de 87 años de edad",
    "gestante de 27 semanas, portadora",
    "Nuestro paciente lleva más de 3 años de seguimiento",
    "TA (percentil 5 para su edad: 43 mmHg)",
    "Tfno de información y citas del hospital 942 56 21 60",
    "Servicio de Nefrología, Hospital Universitario 12 de Octubre.",
    "recuentos de 12.000/mm3 y 1.5.10 en la escala",
    "cambió de domicilio: vive ahora con su hija",  # a field's name inside a sentence
]


@pytest.mark.parametrize("name, text, phi", POSITIVES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(POSITIVES)])
def test_each_spanish_pattern_finds_its_phi(name, text, phi):
    assert [s.text for s in BY_NAME[name].spans(text)] == phi


@pytest.mark.parametrize("text", TRAPS)
def test_the_spanish_patterns_leave_look_alikes_alone(text):
    assert find_patterns(text, patterns_for("es")) == ()


def test_every_spanish_pattern_has_a_positive_and_a_meddocan_type():
    assert {name for name, _, _ in POSITIVES} == {pattern.name for pattern in SPANISH_PATTERNS}
    for pattern in SPANISH_PATTERNS:
        assert pattern.refuses or PHI_TYPES[pattern.label].corpus.endswith("meddocan")


def test_a_time_span_drops_the_taggers_age_but_not_the_patients():
    text = "Mujer de 45 años operada hace 12 años."
    tagger = Document("n", text, tuple(Span(text.index(age), text.index(age) + len(age), "EDAD_SUJETO_ASISTENCIA", age)
                                       for age in ("45 años", "12 años")))
    assert [s.text for s in with_patterns(tagger, patterns_for("es")).spans] == ["45 años"]


def test_a_street_named_after_a_date_is_an_address_not_a_date():
    found = find_patterns("Domicilio: Col, 1 de Mayo, 3 Andén casa 213", patterns_for("es"))
    assert [(s.text, s.source_type) for s in found] == [("Col, 1 de Mayo, 3 Andén casa 213", "CALLE")]


def test_phone_and_fax_are_told_apart_by_their_field():
    text = "Tfno: 933203624 Fax: 933203631 e-mail: a@b.es"
    found = find_patterns(text, patterns_for("es"))
    assert [(s.text, s.source_type) for s in found] == [
        ("933203624", "NUMERO_TELEFONO"), ("933203631", "NUMERO_FAX"), ("a@b.es", "CORREO_ELECTRONICO")]


def test_the_layer_is_chosen_by_language_and_english_patterns_stay_off_spanish_notes():
    assert patterns_for() == DEFAULT_PATTERNS
    assert set(patterns_for("es")) == {p for p in SPANISH_PATTERNS if p.default}
    assert BY_NAME["es_url"] not in patterns_for("es")  # MEDDOCAN annotates no URL: off by default
    note = "Varón de 45 años. Dr. Smith. Ingreso 3 de marzo de 2018, MI '92"
    assert {s.text for s in find_patterns(note, patterns_for("es"))} == {"45 años", "3 de marzo de 2018"}
    with pytest.raises(ValueError, match="'fr'.*en, es"):
        patterns_for("fr")
    assert set(LANGUAGES) == {"en", "es"}


def test_spans_are_labelled_in_the_pipelines_tag_set():
    note = Document("n", "Fecha de Ingreso: 12/12/2016.\nFax: 985-27-36-14.")
    by_type = with_patterns(note, patterns_for("es", ["DATE", "PHONE", "PATIENT"]))
    assert [s.source_type for s in by_type.spans] == ["DATE", "NUMERO_FAX"]  # no FAX in the tag set: its own label
    english = patterns_for("en", ["Date", "DateYear", "HCPName", "Phone"])
    assert {p.name: p.label for p in english}["doctor_title"] == "HCPName"
    assert {p.name: p.label for p in english}["email"] == "EMAIL"  # no category fallback (CONTACT: Phone)


def test_a_pattern_merged_with_a_tagger_keeps_the_taggers_longer_span():
    text = "Antecedentes: hijo de 27 años con asma."
    tagger = Document("n", text, (Span(14, 30, "FAMILIARES_SUJETO_ASISTENCIA", text[14:30]),))
    assert with_patterns(tagger, patterns_for("es")).spans == tagger.spans


def test_a_city_name_defers_to_the_taggers_span_over_it():
    text = "Dra. Soria. Hospital de Soria."
    tagger = Document("n", text, (Span(5, 10, "NOMBRE_PERSONAL_SANITARIO", "Soria"),
                                  Span(12, 29, "HOSPITAL", "Hospital de Soria")))
    assert with_patterns(tagger, patterns_for("es")).spans == tagger.spans
    assert [s.text for s in with_patterns(Document("n", text), patterns_for("es")).spans] == ["Soria", "Soria"]


def test_place_lists_are_spains_and_the_united_states_and_only_spanish_has_countries():
    assert {"Sevilla", "Donostia"} <= set(place_names("es")) and "Baltimore" in place_names("en")
    assert "Sevilla" not in place_names("en")
    with pytest.raises(ValueError, match="no place list for language 'fr'"):
        place_names("fr")
    with pytest.raises(ValueError, match="no country list for language 'en'"):
        country_names("en")


def test_a_country_name_defers_to_the_taggers_span_over_it():
    text = "Natural de Granada, vive en Francia."
    tagger = Document("n", text, (Span(11, 18, "TERRITORIO", "Granada"),))
    assert [(s.text, s.source_type) for s in with_patterns(tagger, patterns_for("es")).spans] == [
        ("Granada", "TERRITORIO"), ("Francia", "PAIS")]


@pytest.mark.parametrize("labels, city, country", [((), "TERRITORIO", "PAIS"),
                                                   (("CITY", "COUNTRY"), "CITY", "COUNTRY")])
def test_a_country_the_list_lacks_is_a_city(labels, city, country):
    text = "Vive en Pamplona, nacido en Portugal; Dr. Montenegro"
    tagger = Document("n", text, (Span(8, 16, country, "Pamplona"), Span(28, 36, country, "Portugal"),
                                  Span(42, 52, "NOMBRE_PERSONAL_SANITARIO", "Montenegro")))
    found = with_patterns(tagger, patterns_for("es", labels)).spans
    assert [(s.text, s.source_type) for s in found] == [
        ("Pamplona", city), ("Portugal", country), ("Montenegro", "NOMBRE_PERSONAL_SANITARIO")]


def test_a_form_cuts_the_taggers_span_that_runs_past_it_and_leaves_no_character_unmarked():
    text = "Correo: ana@x.es luis@y.com Servicio de pediatría. Entre mayo del 2006 y abril del 2009 ingresa."
    runs = [("ana@x.es luis@y.com Servicio de pediatría", "CORREO_ELECTRONICO"),
            ("mayo del 2006 y abril del 2009 ingresa", "FECHAS")]
    tagger = Document("n", text, tuple(Span(text.index(run), text.index(run) + len(run), label, run)
                                       for run, label in runs))
    found = with_patterns(tagger, patterns_for("es")).spans
    assert [(s.text, s.source_type) for s in found] == [
        ("ana@x.es", "CORREO_ELECTRONICO"), ("luis@y.com", "CORREO_ELECTRONICO"),
        ("Servicio de pediatría", "CORREO_ELECTRONICO"), ("mayo del 2006", "FECHAS"), ("y", "FECHAS"),
        ("abril del 2009", "FECHAS"), ("ingresa", "FECHAS")]
    marked = {i for s in found for i in range(s.start, s.end)}
    assert all(i in marked or not text[i].isalnum() for s in tagger.spans for i in range(s.start, s.end))


@pytest.mark.parametrize("command", [
    ["deidentify", "--pipeline", "p", "--notes", "n", "--out", "o", "--format", "json"],
    ["export", "--bundle", "b", "--notes", "n", "--format", "brat", "--out", "o", "--key", "k", "--server-key", "s"]])
def test_the_commands_refuse_a_language_the_layer_does_not_know(command):
    from typer.testing import CliRunner

    from deidpool.cli import app

    result = CliRunner().invoke(app, ["client", *command, "--provider-key", "k", "--language", "fr"])
    assert result.exit_code == 2 and "'fr'" in result.output and "en, es" in result.output


def test_a_list_pattern_compiles_its_regex_at_first_use_only():
    built = []

    def build():
        built.append(1)
        return word_alternation(["Soria", "Teruel"])

    regex = CompiledOnFirstUse(build)
    assert not built  # English notes never pay for the Spanish city list
    assert [m.group() for m in regex.finditer("De Soria a Teruel.")] == ["Soria", "Teruel"]
    assert regex.fullmatch("Teruel") and not regex.fullmatch("Teruela")
    assert len(built) == 1
