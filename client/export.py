"""Export of PHI-labeled notes as a contribution (DESIGN.md, Contribution): prepare,
pseudonymize every gold PHI token, embed, represent with the bundle's representer (noise on),
shuffle across all documents, then encrypt and sign; memory stays bounded by the chunk size
and the shuffle's memory budget (and the notes the safety net flags, kept for its review folder).

Pseudonymize-then-represent (docs/method.md): no PHI token reaches the representer. Each is
replaced under the export's scheme (by default a realistic surrogate of its type and shape
that does not depend on it; or a draw from its group of near embedding neighbours, numbers by
plausible surrogates of the same shape and range), fresh for every occurrence and every
export, from the operating system's randomness; whatever the representer leaks, it leaks a surrogate. An
export may hold several draws of every sentence (fresh surrogates and noise each time): augmentation
that the pooled tagger gains from, at the price of noisy copies an attacker can average. A
sentence's draws are written one after another (the sentences shuffled as wholes), so that the
server holds out all of them or none for validation; they are linkable anyway (the same tags and
casing, near vectors). Labels
can miss PHI: a safety net (`deidpool.client.safety_net`) flags tokens no gold span covers that its
finders take for PHI, and they are pseudonymized too.

The readable header holds the settings, counts and finders only; what depends on the original PHI
values goes to the contribution's sealed summary (`deidpool.contribution.container.read_summary`):
{"reidentification_bound": `deidpool.pseudonymization.bound.reidentification_bound` of the export's PHI
tokens, "safety_net": `Flagged.counts`}."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from operator import attrgetter
from pathlib import Path
from typing import NamedTuple

import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

from deidpool.client.inference import apply_to_sentences, built_once, compile_representer
from deidpool.client.safety_net import Flagged, SafetyNet
from deidpool.client.shuffle import MEMORY_BYTES, ExternalShuffle
from deidpool.contribution.container import ContributionHeader, write_contribution
from deidpool.contribution.records import DTYPES, encode_sentence, split_records
from deidpool.corpus.document import Document
from deidpool.corpus.errors import CorpusError
from deidpool.corpus.formats import check_absent
from deidpool.corpus.prepare import LabeledSentence, prepare_document
from deidpool.pseudonymization.bound import reidentification_bound
from deidpool.pseudonymization.pseudonymize import Pseudonymizer
from deidpool.pseudonymization.schemes import EXPORT_SCHEME, SCHEMES
from deidpool.representer.bundle import Bundle
from deidpool.representer.dataset import SentenceData
from deidpool.representer.progress import progress_bar
from deidpool.representer.settings import check_at_least, check_one_of

CHUNK_SENTENCES = 16384
DEFAULT_NEIGHBOURS = 100


class Exported(NamedTuple):
    """What `export_contribution` wrote: the readable header and the sealed summary."""

    header: ContributionHeader
    summary: dict


def check_draws(draws: int, scheme: str) -> None:
    """Refuse `draws` below 1, or above 1 under "neighbours" (ValueError saying why)."""
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}")
    if draws > 1 and scheme == "neighbours":
        raise ValueError(f"{draws} draws under the neighbours scheme: its draws all lie among the original's "
                         "nearest neighbours, so several narrow it down; export one draw, or use surrogates or groups")


@dataclass(frozen=True)
class ExportSettings:
    """How an export pseudonymizes, represents and writes (defaults: `client export`'s)."""

    # the pseudonymization: PHI tokens among N `neighbours` under `scheme`, in the notes' `language` (also
    # the bound's frequency prior and the default safety net's patterns); `draws` copies of every sentence
    neighbours: int = DEFAULT_NEIGHBOURS
    scheme: str = EXPORT_SCHEME
    language: str = "en"
    draws: int = 1
    # the vectors: their component type, and the representer's noise (off only in experiments' ablations)
    dtype: str = "float16"
    noise: bool = True
    # the memory it takes: sentences represented at a time, and the shuffle's memory budget in bytes
    chunk_sentences: int = CHUNK_SENTENCES
    memory_bytes: int = MEMORY_BYTES

    def __post_init__(self) -> None:
        check_at_least(self, 1, "neighbours", "chunk_sentences", "memory_bytes")
        check_one_of(self, "scheme", SCHEMES)
        check_one_of(self, "dtype", DTYPES)
        check_draws(self.draws, self.scheme)


def export_contribution(documents: Iterable[Document], bundle: Bundle, embeddings, out: str | Path,
                        settings: ExportSettings = ExportSettings(), *, institution: str,
                        signing_key: Ed25519PrivateKey, server_key: X25519PublicKey, rng: random.Random | None = None,
                        safety_net: SafetyNet | None = None, review: str | Path | None = None,
                        progress: bool = True) -> Exported:
    """Write the contribution of `documents` to `out` and return its header and sealed summary.

    `embeddings` are the bundle's (from `bundle.load_embeddings`); `settings` (`ExportSettings`) name
    the rest. Every gold PHI token is pseudonymized among `neighbours` = N under `scheme` ("surrogates",
    the default, "neighbours" or "groups", see `deidpool.pseudonymization.pseudonymize.Pseudonymizer`; both
    recorded in the header; N = 1 replaces nothing but under "surrogates", where N does not apply), drawing
    from `rng` (default: the operating system's randomness; pass one only in tests). The sealed summary
    gets the re-identification bound of these PHI tokens (`deidpool.pseudonymization.bound`, its frequency
    prior in `language`, which is also the language of "surrogates"). `safety_net`
    (`deidpool.client.safety_net.SafetyNet`; default
    the pattern layer of `language`, to which `client export` adds the notes' PHI memory; `OFF` only
    where an experiment needs the labels alone) flags the tokens no gold span covers that its
    finders take for PHI: they are pseudonymized and bounded like gold PHI (their tags stay as
    annotated), the finders named in the header's `safety_net`, what they flagged counted in the
    sealed summary, and the notes that hold them written to the BRAT folder `review` when given.
    Every sentence is exported `draws` times, each copy with fresh surrogates and fresh noise
    (recorded in the header; refused under "neighbours", whose draws all lie near the original, so
    that several of them narrow it down). Sentences are represented `chunk_sentences` at a time,
    spilled to a uniform external shuffle in `out`'s folder, and written in shuffled order; on
    any error no file is left at `out`. `noise` False turns the representer's noise off: an
    ablation for experiments only (noiseless vectors are what a lookup attack reads exactly), so
    no command offers it.
    """
    if review is not None:
        check_absent(review)
    language, dtype, draws, noise = settings.language, settings.dtype, settings.draws, settings.noise
    safety_net = SafetyNet.of_language(language) if safety_net is None else safety_net
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    pseudonymizer = Pseudonymizer(embeddings, settings.neighbours, settings.scheme, language)
    rng = rng or random.SystemRandom()
    # The noise generator runs on from export to export, so each draws fresh noise.
    represent = built_once(bundle, "export" if noise else "export without noise", lambda: compile_representer(
        bundle.load_representer(deterministic=not noise), embeddings.dim))
    count, phi, flagged = 0, Counter(), Flagged(safety_net.finders)
    with ExternalShuffle(out.parent, settings.memory_bytes) as shuffle:
        with progress_bar(desc="representing", unit=" sentences", disable=not progress) as bar:
            for chunk in _chunks(_labeled_sentences(documents, bundle, safety_net, flagged), settings.chunk_sentences):
                phi.update(token for sentence, tags in chunk
                           for token in pseudonymizer.phi_tokens([t.text for t in sentence.tokens], tags))
                copies = [_draw_records(chunk, pseudonymizer, represent, embeddings, bundle.tags, dtype, rng,
                                        bundle.reads_chars)
                          for _ in range(draws)]
                for records in zip(*copies):  # a sentence's draws stay together (module docstring)
                    shuffle.add(b"".join(records))
                count += draws * len(chunk)
                bar.update(draws * len(chunk))
        if not count:
            raise CorpusError("the notes hold no sentences to export")
        if review is not None:
            flagged.write_review(review)
        records = progress_bar((record for copies in shuffle for record in split_records(copies, bundle.repr_size,
                                                                                         dtype)),
                               total=count, desc="writing", unit=" sentences", disable=not progress)
        summary = {"reidentification_bound": reidentification_bound(phi.elements(), pseudonymizer, language=language),
                   "safety_net": flagged.counts()}
        header = write_contribution(out, records, institution=institution, representer_id=bundle.representer_id,
                                    dim=bundle.repr_size, neighbours=settings.neighbours,
                                    pseudonymization=settings.scheme,
                                    safety_net=flagged.header(), draws=draws, summary=summary,
                                    signing_key=signing_key, server_key=server_key, dtype=dtype)
        return Exported(header, summary)


def _draw_records(chunk: list[tuple[LabeledSentence, list[str]]], pseudonymizer: Pseudonymizer, represent,
                  embeddings, tag_set, dtype: str, rng: random.Random, chars: bool) -> list[bytes]:
    """One draw of the sentence records of `chunk` (sentences, each with the tags the pseudonymizer
    goes by): fresh surrogates, represented by `represent` with fresh noise (reading the surrogates'
    characters when `chars`), tagged as annotated."""
    # flagged tokens are replaced too; the exported tags are the gold ones
    marked = pseudonymizer.labeled_sentences(
        [LabeledSentence(sentence.tokens, sentence.casing, tags) for sentence, tags in chunk], rng)
    data = SentenceData.from_sentences([LabeledSentence(replaced.tokens, replaced.casing, sentence.tags)
                                        for replaced, (sentence, _) in zip(marked, chunk)], embeddings, tag_set,
                                       chars=chars)
    boundaries = np.cumsum(data.lengths)[:-1]
    return [encode_sentence(vectors, tags, casing, dtype)
            for vectors, tags, casing in zip(apply_to_sentences(represent, data), np.split(data.tags, boundaries),
                                             np.split(data.casing, boundaries))]


def review_unlabeled_phi(documents: Iterable[Document], bundle: Bundle, safety_net: SafetyNet,
                         review: str | Path) -> Flagged:
    """Run `safety_net` over `documents` as `export_contribution` does, write the notes it flags
    to the BRAT folder `review`, and return what it flagged; nothing is exported."""
    flagged = Flagged(safety_net.finders)
    for _ in _labeled_sentences(documents, bundle, safety_net, flagged):
        pass
    flagged.write_review(review)
    return flagged


def _labeled_sentences(documents: Iterable[Document], bundle: Bundle, safety_net: SafetyNet,
                       flagged: Flagged) -> Iterator[tuple[LabeledSentence, list[str]]]:
    """Every document's sentences with tags of the bundle's scheme, each with the tags the
    pseudonymizer goes by (`Flagged.add`: gold PHI and the tokens `safety_net` flags); a span
    whose label is not in the bundle's tag set is an error naming the document and span."""
    label = attrgetter(bundle.label)
    labels = list(dict.fromkeys(tag.partition("-")[2] for tag in bundle.tags if tag != "O"))
    for document, found in safety_net.found(documents):
        for span in document.spans:
            if label(span) not in labels:
                raise CorpusError(f"PHI label {label(span)!r} is not in the bundle's tag set "
                                  f"({', '.join(sorted(labels))})", None,
                                  f"document {document.id!r}, span {span.source_type} [{span.start}, {span.end})")
        sentences = prepare_document(document, bundle.scheme, label)
        yield from zip(sentences, flagged.add(document, sentences, found, labels))


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk
