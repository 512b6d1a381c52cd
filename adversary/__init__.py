"""Attacks on representations: pseudonymization (baseline and fake-pair generator),
real/fake pair generation, the two sequence-pair adversaries and privacy audits."""
