"""The pseudonymization schemes and the re-identification bound's priors by name, apart from
their implementation (pseudonymization.pseudonymize, pseudonymization.bound) so that the command line, the
server and reports can name them without loading embeddings code."""

# "neighbours" and "groups" draw a word among embedding neighbours (N applies); "surrogates" draws a
# realistic value of the token's PHI type, whatever the original (N does not apply).
EMBEDDING_SCHEMES = ("neighbours", "groups")
SCHEMES = (*EMBEDDING_SCHEMES, "surrogates")
# What exports and audits use unless told otherwise: a realistic value of the token's PHI type and
# shape, whatever the original (N does not apply): a tagger retrained on such exports scores higher
# than under "groups" (chosen by experiments/pseudonymization_utility.py; see its results page and
# docs/privacy.md).
# The three-phase training's pairs keep the paper's "neighbours".
EXPORT_SCHEME = "surrogates"
# The priors over original tokens that pseudonymization.bound computes the bound under.
PRIORS = ("uniform", "frequency", "empirical")
