"""Public name lists for the pattern layer, per language: names any copy of the software may carry,
since they come from no institution's notes (unlike the PHI memory, `deidpool.client.memory`).

Spanish country names are Faker's `es` locale list (193 states) and the other names MEDDOCAN's
clinical cases give countries ("EE.UU.", "Reino Unido"). A country is PHI wherever MEDDOCAN names
one, and the raw text holds it as it is; a tagger on exports knows the word only through the
representation, which is trained not to tell words apart (experiments/results/federation/
novelty_breakdown_meddocan_valloss.md), so a public list gives back what the tagger cannot learn.
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
    from faker.providers.address.es import Provider  # 70-80 ms, paid where the pattern layer is imported

    return tuple(sorted({*Provider.countries, *_SPANISH_COUNTRY_ALIASES}))
