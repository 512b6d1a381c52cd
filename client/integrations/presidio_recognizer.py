"""A Presidio recognizer backed by a signature-checked deidpool pipeline, so that Presidio's
`AnalyzerEngine` and `AnonymizerEngine` run unchanged on top of it (`pip install
'deidpool[presidio]'`), and an NLP engine on a blank spaCy pipeline, so that no spaCy model has
to be downloaded.

Entity names: every deidpool label is first mapped to its i2b2 2014 type (`deidpool.corpus.categories`),
then by `PRESIDIO_ENTITIES` to a Presidio entity. Presidio's own names are used where one
fits (PERSON, LOCATION, DATE_TIME, PHONE_NUMBER, EMAIL_ADDRESS, URL, IP_ADDRESS, US_SSN,
MEDICAL_LICENSE); otherwise the names Presidio's i2b2 de-identification model configuration
uses (AGE, ID, ORGANIZATION; conf/transformers.yaml), and PROFESSION and OTHER for the two
i2b2 types Presidio has no name for. The table is in docs/integrations.md.
"""

from __future__ import annotations

from collections.abc import Mapping

try:
    import spacy
    from presidio_analyzer import AnalysisExplanation, EntityRecognizer, RecognizerResult
    from presidio_analyzer.nlp_engine import SpacyNlpEngine
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(f"the Presidio integration needs {error.name}: pip install 'deidpool[presidio]'") from error

from deidpool.client.deidentify import PhiFinder
from deidpool.corpus.categories import phi_type

# i2b2 2014 type -> Presidio entity name (docs/integrations.md)
PRESIDIO_ENTITIES: dict[str, str] = {
    "PATIENT": "PERSON", "DOCTOR": "PERSON", "USERNAME": "PERSON",
    "PROFESSION": "PROFESSION",
    "ROOM": "LOCATION", "DEPARTMENT": "LOCATION", "HOSPITAL": "LOCATION", "ORGANIZATION": "ORGANIZATION",
    "STREET": "LOCATION", "CITY": "LOCATION", "STATE": "LOCATION", "COUNTRY": "LOCATION", "ZIP": "LOCATION",
    "LOCATION-OTHER": "LOCATION",
    "AGE": "AGE", "DATE": "DATE_TIME",
    "PHONE": "PHONE_NUMBER", "FAX": "PHONE_NUMBER", "EMAIL": "EMAIL_ADDRESS", "URL": "URL",
    "IPADDR": "IP_ADDRESS",
    "SSN": "US_SSN", "MEDICALRECORD": "ID", "HEALTHPLAN": "ID", "ACCOUNT": "ID", "LICENSE": "MEDICAL_LICENSE",
    "VEHICLE": "ID", "DEVICE": "ID", "BIOID": "ID", "IDNUM": "ID",
    "OTHER": "OTHER",
}
DEFAULT_SCORE = 0.85  # what Presidio gives spaCy NER entities (NerModelConfiguration.default_score)


class DeidpoolRecognizer(EntityRecognizer):
    """Presidio results from the PHI spans a published deidpool pipeline finds.

    Args:
        finder: the verified pipeline (`PhiFinder.open(pipeline, provider_key)`); or build the
            recognizer with `DeidpoolRecognizer.open(pipeline, provider_key, ...)`.
        entity_names: i2b2 2014 type -> Presidio entity name (default `PRESIDIO_ENTITIES`).
        score: the score of every result (the tagger's CRF gives no per-span confidence).
        supported_language: the language code Presidio routes to this recognizer.

    Results carry the pipeline's own label and its i2b2 2014 type in `recognition_metadata`
    ("deidpool_label", "deidpool_type").
    """

    def __init__(self, finder: PhiFinder, *, entity_names: Mapping[str, str] = PRESIDIO_ENTITIES,
                 score: float = DEFAULT_SCORE, supported_language: str = "en", name: str = "DeidpoolRecognizer"):
        if not 0 <= score <= 1:
            raise ValueError(f"score must be in [0, 1], got {score}")
        types = {label: phi_type(label).type for label in finder.labels}
        unmapped = sorted(set(types.values()) - entity_names.keys())
        if unmapped:
            raise ValueError(f"no Presidio entity for the i2b2 2014 types {', '.join(unmapped)}")
        self.finder, self.score = finder, score
        self.entity_of = {label: entity_names[type_] for label, type_ in types.items()}
        self.type_of = types
        super().__init__(supported_entities=sorted(set(self.entity_of.values())), name=name,
                         supported_language=supported_language, version=finder.pipeline.representer_id)

    @classmethod
    def open(cls, pipeline, provider_key, *, embeddings: str | None = None, patterns: bool = True,
             **options) -> DeidpoolRecognizer:
        """The recognizer of the pipeline at `pipeline` (folder or .tar), verified with the PEM
        public key file `provider_key`; `patterns`: merge the pattern layer's spans (default, as
        `deidpool client deidentify`); `options` as the constructor's."""
        return cls(PhiFinder.open(pipeline, provider_key, embeddings=embeddings, patterns=patterns), **options)

    def load(self) -> None:
        """Nothing to load: the pipeline was verified and loaded when the finder was opened."""

    def analyze(self, text: str, entities: list[str] | None, nlp_artifacts=None) -> list[RecognizerResult]:
        """One result per PHI span of `text` whose entity is in `entities` (all when empty)."""
        if not text.strip():
            return []
        [spans] = self.finder.spans([text])
        results = []
        for span in spans:
            entity = self.entity_of[span.source_type]
            if entities and entity not in entities:
                continue
            explanation = AnalysisExplanation(recognizer=self.name, original_score=self.score,
                                              textual_explanation=f"deidpool pipeline {self.version}: "
                                                                  f"{span.source_type}")
            results.append(RecognizerResult(entity, span.start, span.end, self.score, explanation, {
                RecognizerResult.RECOGNIZER_NAME_KEY: self.name, RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: self.id,
                "deidpool_label": span.source_type, "deidpool_type": self.type_of[span.source_type]}))
        return results


class BlankSpacyNlpEngine(SpacyNlpEngine):
    """Presidio's spaCy NLP engine on blank spaCy pipelines (`spacy.blank`: tokenizer, stop
    words and punctuation, no trained model, no download). It gives Presidio's context enhancer
    and pattern recognizers their tokens; it finds no entities itself.

    Args:
        languages: the language codes to load (spaCy's, e.g. "en", "es").
    """

    def __init__(self, languages: tuple[str, ...] | list[str] = ("en",)):
        super().__init__(models=[{"lang_code": language, "model_name": f"blank:{language}"}
                                 for language in languages])

    def load(self) -> None:
        self.nlp = {model["lang_code"]: spacy.blank(model["lang_code"]) for model in self.models}
