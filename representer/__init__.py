"""The provider's side: word embeddings, noise layer, representer, CRF tagger, training
procedures and signed model bundles."""
