"""The single table mapping every source PHI type of every supported corpus to the i2b2 2014
category/type and a HIPAA flag.

HIPAA flags follow the 18 Safe-Harbor identifiers: patient (and relative) names, geographic
units smaller than a state (street, city, zip), dates, ages, contact details and all
identifying numbers are HIPAA; clinician names, professions, hospitals, organisations,
states, countries and free "other" PHI are PHI under i2b2 2014 but not HIPAA-mandated.
Corpora that lump several i2b2 types into one label (PhysioNet `Location`, i2b2 2006
`LOCATION`, MEDDOCAN `TERRITORIO`) are flagged HIPAA because they contain cities and zips.
"""

from __future__ import annotations

from typing import NamedTuple


class PhiType(NamedTuple):
    source_type: str
    corpus: str
    category: str
    type: str
    hipaa: bool


_I2B2_2014 = [
    ("NAME", "PATIENT", True), ("NAME", "DOCTOR", False), ("NAME", "USERNAME", False),
    ("PROFESSION", "PROFESSION", False),
    ("LOCATION", "ROOM", False), ("LOCATION", "DEPARTMENT", False), ("LOCATION", "HOSPITAL", False),
    ("LOCATION", "ORGANIZATION", False), ("LOCATION", "STREET", True), ("LOCATION", "CITY", True),
    ("LOCATION", "STATE", False), ("LOCATION", "COUNTRY", False), ("LOCATION", "ZIP", True),
    ("LOCATION", "LOCATION-OTHER", False),
    ("AGE", "AGE", True), ("DATE", "DATE", True),
    ("CONTACT", "PHONE", True), ("CONTACT", "FAX", True), ("CONTACT", "EMAIL", True),
    ("CONTACT", "URL", True), ("CONTACT", "IPADDR", True),
    ("ID", "SSN", True), ("ID", "MEDICALRECORD", True), ("ID", "HEALTHPLAN", True),
    ("ID", "ACCOUNT", True), ("ID", "LICENSE", True), ("ID", "VEHICLE", True),
    ("ID", "DEVICE", True), ("ID", "BIOID", True), ("ID", "IDNUM", True),
    ("OTHER", "OTHER", False),
]

# source type -> i2b2 2014 type, for the corpora that use their own labels.
_SOURCE_TO_I2B2 = {
    "physionet": {
        "PTName": "PATIENT", "PTNameInitial": "PATIENT", "RelativeProxyName": "PATIENT",
        "HCPName": "DOCTOR", "Location": "LOCATION-OTHER", "Date": "DATE", "DateYear": "DATE",
        "Age": "AGE", "Phone": "PHONE", "Other": "OTHER",
    },
    "i2b2-2006": {"LOCATION": "LOCATION-OTHER", "ID": "IDNUM"},
    "meddocan": {
        "NOMBRE_SUJETO_ASISTENCIA": "PATIENT", "FAMILIARES_SUJETO_ASISTENCIA": "PATIENT",
        "NOMBRE_PERSONAL_SANITARIO": "DOCTOR", "PROFESION": "PROFESSION",
        "EDAD_SUJETO_ASISTENCIA": "AGE", "FECHAS": "DATE", "SEXO_SUJETO_ASISTENCIA": "OTHER",
        "OTROS_SUJETO_ASISTENCIA": "OTHER", "CALLE": "STREET", "TERRITORIO": "CITY",
        "PAIS": "COUNTRY", "HOSPITAL": "HOSPITAL", "CENTRO_SALUD": "HOSPITAL",
        "INSTITUCION": "ORGANIZATION", "CORREO_ELECTRONICO": "EMAIL",
        "NUMERO_TELEFONO": "PHONE", "NUMERO_FAX": "FAX", "DIREC_PROT_INTERNET": "URL",
        "URL_WEB": "URL", "ID_SUJETO_ASISTENCIA": "MEDICALRECORD",
        "ID_CONTACTO_ASISTENCIAL": "ACCOUNT", "ID_ASEGURAMIENTO": "HEALTHPLAN",
        "ID_TITULACION_PERSONAL_SANITARIO": "LICENSE", "ID_EMPLEO_PERSONAL_SANITARIO": "IDNUM",
        "IDENTIF_VEHICULOS_NRSERIE_PLACAS": "VEHICLE", "IDENTIF_DISPOSITIVOS_NRSERIE": "DEVICE",
        "IDENTIF_BIOMETRICOS": "BIOID", "NUMERO_IDENTIF": "IDNUM",
    },
}

# Lumped labels whose HIPAA flag differs from the i2b2 type they map to (see module doc).
_HIPAA_OVERRIDES = {"Location": True, "LOCATION": True}

# i2b2 2006 labels that are also i2b2 2014 types keep their 2014 meaning.
_I2B2_2006_SHARED = ("PATIENT", "DOCTOR", "HOSPITAL", "DATE", "PHONE", "AGE")


def _build_table() -> dict[str, PhiType]:
    by_type = {type_: (category, hipaa) for category, type_, hipaa in _I2B2_2014}
    table = {t: PhiType(t, "i2b2-2014", c, t, h) for t, (c, h) in by_type.items()}
    for corpus, mapping in _SOURCE_TO_I2B2.items():
        for source_type, type_ in mapping.items():
            category, hipaa = by_type[type_]
            hipaa = _HIPAA_OVERRIDES.get(source_type, hipaa)
            table[source_type] = PhiType(source_type, corpus, category, type_, hipaa)
    for type_ in _I2B2_2006_SHARED:
        table[type_] = table[type_]._replace(corpus="i2b2-2014, i2b2-2006")
    table["HOSPITAL"] = table["HOSPITAL"]._replace(corpus="i2b2-2014, i2b2-2006, meddocan")
    return table


PHI_TYPES: dict[str, PhiType] = _build_table()
I2B2_CATEGORIES: tuple[str, ...] = tuple(dict.fromkeys(c for c, _, _ in _I2B2_2014))
I2B2_TYPES: tuple[str, ...] = tuple(t for _, t, _ in _I2B2_2014)


def phi_type(source_type: str) -> PhiType:
    """Look up a source label; KeyError (with the known labels) if it is not in the table."""
    try:
        return PHI_TYPES[source_type]
    except KeyError:
        raise KeyError(f"unknown PHI type {source_type!r}; known types: {', '.join(sorted(PHI_TYPES))}") from None


def markdown_table() -> str:
    """The table as Markdown (used by `deidpool corpus categories` and the README)."""
    rows = ["| source type | corpus | i2b2 category | i2b2 type | HIPAA |", "|---|---|---|---|---|"]
    for t in sorted(PHI_TYPES.values(), key=lambda t: (t.corpus, t.category, t.source_type)):
        rows.append(f"| {t.source_type} | {t.corpus} | {t.category} | {t.type} | {'yes' if t.hipaa else 'no'} |")
    return "\n".join(rows)
