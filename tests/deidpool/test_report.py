"""The demo report's score table and plot: the official i2b2 2014 token HIPAA measure is the
headline, named as such, with its bootstrap interval and the project tokenizer's F1 beside it."""

import matplotlib

from deidpool.report import SCORE_COLUMNS, format_summary, plot_scores

matplotlib.use("Agg")

SCORES = {"token_official_hipaa_precision": 0.91, "token_official_hipaa_recall": 0.82,
          "token_official_hipaa_f1": 0.8627, "token_official_hipaa_f1_interval": [0.8011, 0.9102],
          "token_hipaa_precision": 0.71, "token_hipaa_recall": 0.62, "token_hipaa_f1": 0.6619,
          "token_hipaa_f1_interval": [0.6, 0.7], "entity_strict_precision": 0.5, "entity_strict_recall": 0.4,
          "entity_strict_f1": 0.4444, "entity_strict_f1_interval": [0.4, 0.5]}
SUMMARY = {"stages": [{"name": "data", "seconds": 1.0, "details": {}}], "scores": {"pooled": SCORES},
           "audit": {"verdict": "broken"}, "wall_seconds": 1.0, "peak_memory_mb": {"demo": 100.0}}


def test_the_score_table_leads_with_the_official_measure_and_names_every_column():
    table = format_summary(SUMMARY).split("\n\n")[1].splitlines()
    header, row = table[0], table[2]
    titles = [title for _, title in SCORE_COLUMNS]
    assert titles[:4] == ["token HIPAA P (official i2b2 2014 tokenization)",
                          "token HIPAA R (official i2b2 2014 tokenization)",
                          "token HIPAA F1 (official i2b2 2014 tokenization)",
                          "token HIPAA F1 95% bootstrap CI over notes (official i2b2 2014 tokenization)"]
    assert "token HIPAA F1 (project tokenizer)" in titles
    assert all(title in header for title in titles)
    assert row.split()[1:6] == ["0.9100", "0.8200", "0.8627", "[0.8011,", "0.9102]"]
    assert row.split()[6:] == ["0.6619", "0.4444"]


def test_the_score_plot_draws_the_intervals(tmp_path):
    plot_scores({"scores": {"pooled": SCORES, "provider-only": {**SCORES, "token_official_hipaa_f1": 0.95}}},
                tmp_path / "scores.png")
    assert (tmp_path / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
