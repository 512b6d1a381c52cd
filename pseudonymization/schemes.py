"""The pseudonymization schemes and the re-identification bound's priors by name, apart from
their implementation (pseudonymization.pseudonymize, pseudonymization.bound) so that the command line, the
server and reports can name them without loading embeddings code."""

# "neighbours" and "groups" draw a word among embedding neighbours (N applies); "surrogates" draws a
# realistic value of the token's PHI type, whatever the original (N does not apply).
EMBEDDING_SCHEMES = ("neighbours", "groups")
SCHEMES = (*EMBEDDING_SCHEMES, "surrogates")
# What exports and audits use unless told otherwise: a realistic value of the token's PHI type and
# shape, whatever the original (N does not apply). A tagger retrained on such exports scores +2.9
# [+2.0, +3.9] points of entity strict F1 over "groups" at N = 100 (+1.1 with the pattern layer;
# token HIPAA +2.0), -3.8 against raw text (MEDDOCAN, 3 seeds:
# experiments/results/privacy/pseudonymization_utility_meddocan_short.md; docs/privacy.md).
# The three-phase training's pairs keep the paper's "neighbours".
EXPORT_SCHEME = "surrogates"
# The priors over original tokens that pseudonymization.bound computes the bound under.
PRIORS = ("uniform", "frequency", "empirical")
