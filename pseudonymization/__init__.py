"""What an export does to the PHI of a sentence before the representer reads it, shared by the
client (export), the adversary (audits attack what the client would share) and the server (the
schemes and priors a contribution may declare): the schemes, the surrogate draws, the
pseudonymizer and the re-identification bound."""
