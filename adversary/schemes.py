"""The pseudonymization schemes by name, apart from their implementation (adversary.pseudonymize)
so that the command line can name them without loading embeddings code."""

SCHEMES = ("neighbours", "groups")
# What exports and audits use unless told otherwise: a surrogate drawn from a group shared by all
# its members says nothing about which member it replaced (docs/privacy.md). The three-phase
# training's pairs keep the paper's "neighbours".
EXPORT_SCHEME = "groups"
