"""Classic, non-private de-identification baselines from the literature (CRF, SVM, character
BiLSTM-CRF), trained and applied through the same documents-in, spans-out interface as the
tagger, so that `deidpool evaluate` scores them the same way."""
