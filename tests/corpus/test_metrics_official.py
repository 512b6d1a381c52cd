"""`deidpool.corpus.metrics` (what `deidpool evaluate` prints) beside the official scorers in
../shared/reference, run as scripts on perturbed predictions of real notes (PhysioNet deid test
notes, MEDDOCAN dev documents): every score they share must agree within 0.001."""

import os
import random
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from deidpool.corpus.categories import PHI_TYPES, phi_type
from deidpool.corpus.document import Document, Span
from deidpool.corpus.errors import CorpusWarning
from deidpool.corpus.formats import read_corpus, write_corpus
from deidpool.corpus.metrics import evaluate_corpus

REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference"
TOLERANCE = 0.001
NOTES = 6
KINDS = ("drop", "shift", "retype", "add", "overlap")
# official i2b2 2014 row -> our measure
I2B2_ROWS = {"Binary HIPPA Token": "token_official_hipaa", "Binary Token": "token_official_all",
             "Strict": "entity_strict"}
_I2B2_BLOCK = re.compile(r"^(\S.*?) \((\d+)\) +Measure.*\n-+\nTotal +Precision +(\S+) \(\S+\) +(\S+) *\n"
                         r" +Recall +(\S+) \(\S+\) +(\S+) *\n +F1 +(\S+) +(\S+) *\n", re.M)


@pytest.fixture(scope="module")
def reference() -> Path:
    if not REFERENCE.is_dir():
        pytest.skip(f"official scorers {REFERENCE} are absent (they live in ../shared/reference beside the repository)")
    pytest.importorskip("lxml", reason="the official i2b2 2014 script needs lxml: pip install -e '.[test]'")
    return REFERENCE


def real_notes(corpus: str, folder: Path) -> list[Document]:
    """A handful of PhysioNet test notes or MEDDOCAN dev documents, those with the most PHI."""
    if corpus == "physionet":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CorpusWarning)  # the corpus's one merged phrase pair
            documents = read_corpus(folder, "physionet", split="test")
    else:
        documents = [document for file in sorted((folder / "dev" / "xml").glob("*.xml"))[:3 * NOTES]
                     for document in read_corpus(file, "meddocan")]
    return sorted(documents, key=lambda d: (-len(d.spans), d.id))[:NOTES]


def perturb(document: Document, kinds: tuple[str, ...], rng: random.Random, labels: list[str]) -> Document:
    """A prediction: gold spans dropped, shifted, retyped (to another i2b2 type), false spans
    added (one of them without letters or digits), and overlapping or repeated spans."""
    text = document.text

    def span(start: int, end: int, label: str) -> Span:
        start = min(max(start, 0), len(text) - 1)
        end = min(max(end, start + 1), len(text))
        return Span(start, end, label, text[start:end])

    spans = []
    for s in document.spans:
        if "drop" in kinds and rng.random() < 0.3:
            continue
        if "shift" in kinds and rng.random() < 0.5:
            s = span(s.start + rng.randint(-3, 3), s.end + rng.randint(-3, 3), s.source_type)
        if "retype" in kinds and rng.random() < 0.4:
            s = span(s.start, s.end, rng.choice([label for label in labels if phi_type(label).type != s.type]))
        spans.append(s)
        if "overlap" in kinds and rng.random() < 0.4:
            other = span(s.start - rng.randint(0, 4), s.start + rng.randint(1, 6), rng.choice(labels))
            spans.append(rng.choice([s, other]))
    if "add" in kinds:
        starts = [rng.randrange(len(text)) for _ in range(4)]
        spans += [span(start, start + rng.randint(1, 12), rng.choice(labels)) for start in starts]
        mark = re.search(r"[^\w\s]", text)
        spans.append(span(mark.start(), mark.end(), rng.choice(labels)))
    return Document(document.id, text, tuple(spans))


def as_i2b2(documents: list[Document]) -> list[Document]:
    """The documents with i2b2 2014 types as labels, the only labels the i2b2 script knows."""
    return [Document(d.id, d.text, tuple(Span(s.start, s.end, s.type, s.text) for s in d.spans)) for d in documents]


def official_i2b2(reference: Path, gold: list[Document], pred: list[Document], folder: Path) -> dict[str, dict]:
    """{row: {"micro": (P, R, F1), "macro": (P, R, F1)}} from `evaluate.py phi SYSTEM/ GOLD/`,
    checking that every row scored all the documents."""
    write_corpus(as_i2b2(gold), folder / "gold", "i2b2")
    write_corpus(as_i2b2(pred), folder / "system", "i2b2")
    output = subprocess.run([sys.executable, "evaluate.py", "phi", f"{folder / 'system'}/", f"{folder / 'gold'}/"],
                            cwd=reference / "i2b2_2014_evaluation", capture_output=True, text=True, check=True).stdout
    rows = {}
    for match in _I2B2_BLOCK.finditer(output):
        assert int(match[2]) == len(gold), match[0]
        macro_p, micro_p, macro_r, micro_r, macro_f1, micro_f1 = map(float, match.groups()[2:])
        rows[match[1]] = {"micro": (micro_p, micro_r, micro_f1), "macro": (macro_p, macro_r, macro_f1)}
    return rows


def official_meddocan(reference: Path, gold: list[Document], pred: list[Document], folder: Path) -> tuple:
    """Subtask 1 (NER, strict) micro (P, R, F1) from the MEDDOCAN script."""
    write_corpus(gold, folder / "input" / "ref" / "xml", "meddocan")
    write_corpus(pred, folder / "input" / "res" / "xml" / "subtask1", "meddocan")
    subprocess.run([sys.executable, "evaluate.py", str(folder / "input"), str(folder / "output")],
                   cwd=reference / "meddocan_evaluation", capture_output=True, check=True,
                   env={**os.environ, "PYTHONUTF8": "1"})
    scores = dict(line.split(" : ") for line in (folder / "output" / "scores.txt").read_text().splitlines())
    return tuple(float(scores[f"Subtask1_{measure}"]) for measure in ("Precision", "Recall", "F1"))


def ours(scores: dict) -> dict[str, tuple]:
    return {"micro": (scores["precision"], scores["recall"], scores["f1"]),
            "macro": tuple(scores["macro"][m] for m in ("precision", "recall", "f1"))}


@pytest.mark.parametrize("kinds", [(kind,) for kind in KINDS] + [KINDS], ids=[*KINDS, "all"])
@pytest.mark.parametrize("corpus", ["physionet", "meddocan"])
def test_scores_agree_with_the_official_scripts(request, reference, tmp_path, corpus, kinds):
    gold = real_notes(corpus, request.getfixturevalue(f"{corpus}_dir"))
    rng = random.Random(f"{corpus} {kinds}")
    labels = sorted(t.source_type for t in PHI_TYPES.values() if corpus in t.corpus.split(", "))
    pred = [perturb(document, kinds, rng, labels) for document in gold]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CorpusWarning)
        scores = evaluate_corpus(gold, pred)
    if "overlap" in kinds:
        assert any("overlapping prediction spans" in str(w.message) for w in caught)

    official = official_i2b2(reference, gold, pred, tmp_path / "i2b2")
    assert official["Strict"]["micro"][2] < 1  # the perturbation did change the prediction
    for row, name in I2B2_ROWS.items():
        for average, values in ours(scores[name]).items():
            assert values == pytest.approx(official[row][average], abs=TOLERANCE), (row, average)
    meddocan = official_meddocan(reference, gold, pred, tmp_path / "meddocan")
    assert ours(scores["entity_strict"])["micro"] == pytest.approx(meddocan, abs=TOLERANCE)
    if kinds == KINDS:  # the project's own tokens are a different measure, and the test can tell
        assert abs(scores["token_hipaa"]["f1"] - scores["token_official_hipaa"]["f1"]) > TOLERANCE
