"""Published deidpool pipelines inside other de-identification toolkits: a Presidio
`EntityRecognizer` (`presidio_recognizer`, extra `deidpool[presidio]`) and a spaCy pipeline
component (`spacy_component`, extra `deidpool[spacy]`). Both verify the pipeline's signature
with the pinned provider key and find PHI with `deidpool.client.deidentify.PhiFinder`; neither module is
imported unless asked for, so the toolkits stay optional.
"""
