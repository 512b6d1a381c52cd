"""`deidpool provider ...` (keys, signed bundles) and `deidpool client ...` (keys, export,
inspect, upload, de-identification): the provider's and the institution's commands."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

import typer

from deidpool.cli.groups import command_group
from deidpool.cli.http import ALLOW_INSECURE_HTTP_HELP
from deidpool.cli.runtime import start_tensorflow
from deidpool.client.memory import MIN_PRECISION
from deidpool.client.server_url import ALLOW_INSECURE_HTTP
from deidpool.corpus.errors import CorpusError
from deidpool.pseudonymization.schemes import EXPORT_SCHEME
from deidpool.representer import keys

PASSPHRASE_ENV = "DEIDPOOL_KEY_PASSPHRASE"

provider_app = command_group("The provider: signing keys and signed representer bundles.")
client_app = command_group("The institution: export, inspect and upload contributions; "
                                                    "de-identify notes with a published pipeline.")


@contextlib.contextmanager
def clean_errors() -> Iterator[None]:
    """Bad input of any kind, or a refusal by the server -> one clear line on stderr and exit
    status 2."""
    try:
        yield
    except Exception as error:
        if not isinstance(error, _input_errors()):
            raise
        typer.secho(f"error: {error}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from None


def _input_errors() -> tuple[type[Exception], ...]:
    """The errors `clean_errors` reports, imported only once one is raised (some modules are slow)."""
    from deidpool.cli.http import ServerError
    from deidpool.client.memory import PhiMemoryError
    from deidpool.client.transport import UploadError
    from deidpool.contribution.records import ContributionError
    from deidpool.representer.bundle import BundleError
    from deidpool.server.settings import SettingsError

    return (CorpusError, BundleError, ContributionError, keys.KeyFileError, UploadError, ServerError, SettingsError,
            PhiMemoryError)


def _new_passphrase(protect: bool) -> str | None:
    if not protect:
        return None
    return os.environ.get(PASSPHRASE_ENV) or typer.prompt("passphrase", hide_input=True, confirmation_prompt=True)


def private_key(path: Path, kind: str):
    """The private key at `path`, asking for its passphrase (or reading $DEIDPOOL_KEY_PASSPHRASE)."""
    passphrase = None
    if keys.is_encrypted(path):
        passphrase = os.environ.get(PASSPHRASE_ENV) or typer.prompt(f"passphrase for {path}", hide_input=True)
    return keys.load_private_key(path, kind, passphrase)


def _print_pairs(pairs) -> None:
    for pair in pairs:
        typer.echo(f"wrote {pair.private} (private, keep it secret) and {pair.public}; fingerprint {pair.fingerprint}")


_PASSPHRASE_HELP = f"Protect the private key with a passphrase (asked for, or ${PASSPHRASE_ENV})."


@provider_app.command("keygen")
def provider_keygen(
    out: Path = typer.Option(..., "--out", help="Folder for provider.key and provider.pub."),
    passphrase: bool = typer.Option(False, "--passphrase", help=_PASSPHRASE_HELP),
) -> None:
    """Create the provider's Ed25519 key that signs bundles; institutions pin provider.pub."""
    with clean_errors():
        _print_pairs([keys.create_provider_keys(out, _new_passphrase(passphrase))])


@provider_app.command("publish")
def publish(
    run: Path = typer.Option(..., "--run", help="Training run folder: models/representer.keras [models/tagger.keras], "
                                                "config.json with 'embeddings' and 'tags', metrics.json."),
    key: Path = typer.Option(..., "--key", help="The provider's private key (provider.key)."),
    out: Path = typer.Option(..., "--out", help="New bundle: a folder, or a .tar file."),
    audit: Path | None = typer.Option(None, "--audit", help="Audit summary: a JSON file or an audit run folder."),
) -> None:
    """Publish a training run as a signed bundle (a pipeline when the run has a tagger)."""
    start_tensorflow()

    from deidpool.representer.bundle import publish_run

    with clean_errors():
        manifest = publish_run(run, private_key(key, keys.SIGNING), out, audit)
    typer.echo(f"published {manifest['kind']} {manifest['representer_id']} to {out} "
               f"(signed by {manifest['signed_by']})")


@client_app.command("keygen")
def client_keygen(
    out: Path = typer.Option(..., "--out", help="Folder for institution.key, institution.pub, institution.json."),
    institution: str = typer.Option(..., "--institution", help="The institution id contributions carry."),
    passphrase: bool = typer.Option(False, "--passphrase", help=_PASSPHRASE_HELP),
) -> None:
    """Create the institution's Ed25519 key that signs its contributions; the server registers institution.pub."""
    from deidpool.client.identity import create_institution_keys
    from deidpool.contribution.identity import check_institution_id

    try:
        check_institution_id(institution)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--institution") from None
    with clean_errors():
        _print_pairs([create_institution_keys(out, institution, _new_passphrase(passphrase))])


def _open_bundle(path: Path, provider_key: Path, embeddings: str | None, load_embeddings: bool = True):
    """The verified bundle and its verified embeddings (None unless `load_embeddings`)."""
    from deidpool.representer.bundle import open_bundle

    bundle = open_bundle(path, keys.load_public_key(provider_key, keys.SIGNING))
    return bundle, bundle.load_embeddings(embeddings) if load_embeddings else None


_EMBEDDINGS_HELP = "Where to find the bundle's embeddings, if not by its own spec (e.g. fasttext:PATH)."
SAFETY_NET_MODES = ("pseudonymize", "review", "off")
_SAFETY_NET_HELP = ("Look for PHI the labels miss before exporting: the pattern layer of --language (en: dates, phone "
                    "numbers, ages over 89, IDs, e-mail, URLs, names after Dr/Mr/Mrs or a relative's 'wife', 'son', "
                    "signatures; es: dates, phone and fax numbers, e-mail, IDs, ages, postal codes), the PHI "
                    "memory of the notes (a string they label in at least half of its occurrences, unlabeled here), "
                    "and the --pipeline's tagger if given. pseudonymize: the tokens it flags are pseudonymized like "
                    "labeled PHI (their tags stay as annotated), counted in the signed header, and the notes that "
                    "hold them written to the --review folder; review: only write the --review folder, export "
                    "nothing; off: look for nothing (unlabeled PHI reaches the representer as it is).")


@client_app.command("export")
def export(
    bundle_path: Path = typer.Option(..., "--bundle", help="The provider's representer bundle (folder or .tar)."),
    provider_key: Path = typer.Option(..., "--provider-key", help="The pinned provider public key (provider.pub)."),
    notes: Path = typer.Option(..., "--notes", help="PHI-labeled notes (file or folder, as --format needs)."),
    fmt: str = typer.Option(..., "--format", help="Format of the notes: i2b2, meddocan, brat, physionet, conll, json."),
    split: str | None = typer.Option(None, "--split", help="Read only this named split (the nearest "
                                                        "splits.json: PhysioNet, MEDDOCAN)."),
    server_key: Path = typer.Option(..., "--server-key", help="The server's X25519 public key "
                                                              "(server-encryption.pub)."),
    key: Path = typer.Option(..., "--key", help="The institution's private key (institution.key)."),
    out: Path = typer.Option(..., "--out", help="The contribution file to write (.dpc)."),
    dtype: str = typer.Option("float16", "--dtype", help="Vector precision: float16 or float32."),
    embeddings: str | None = typer.Option(None, "--embeddings", help=_EMBEDDINGS_HELP),
    neighbours: int = typer.Option(100, "--neighbours", "-n", min=1,
                                   help="Under --pseudonymization neighbours or groups: pseudonymize every PHI token "
                                        "among its N nearest embedding neighbours before the representer runs "
                                        "(recorded in the header; servers set a minimum); not used by surrogates, "
                                        "the default."),
    pseudonymization: str = typer.Option(EXPORT_SCHEME, "--pseudonymization",
                                         help="surrogates (the default): a PHI token becomes a realistic value of its "
                                              "PHI type and shape in --language, whatever the original (the bound is "
                                              "then the attacker's prior; taggers retrained on such exports score "
                                              "higher than under groups, docs/privacy.md); neighbours: a PHI word "
                                              "becomes one of its N nearest neighbours; groups: one of its group of N "
                                              "to 2N - 1 words, shared by all of them (a surrogate then says nothing "
                                              "about which group member it replaced)."),
    draws: int = typer.Option(1, "--draws", min=1, help="Export every sentence this many times, each with fresh "
                                                        "surrogates and fresh noise (recorded in the header; the "
                                                        "server's max_draws, default 1, caps it): augmentation for "
                                                        "the pooled tagger, at the price of copies an attacker "
                                                        "averages (docs/privacy.md). Not under --pseudonymization "
                                                        "neighbours; above 1 only with --accept-draw-narrowing."),
    accept_draw_narrowing: bool = typer.Option(False, "--accept-draw-narrowing",
                                               help="Export --draws above 1 although a surrogate never equals its "
                                                    "original, so that K draws of one sentence exclude up to K "
                                                    "values of each PHI token, which the header's bound (of one "
                                                    "draw) does not count (docs/privacy.md)."),
    language: str | None = typer.Option(None, "--language", help="Language of the notes, for the frequency prior "
                                                                  "of the re-identification bound (wordfreq code: "
                                                                  "en, es, ...), of surrogates and of the safety "
                                                                  "net's patterns (en or es); default: detected "
                                                                  "from the notes (en or es)."),
    safety_net: str = typer.Option("pseudonymize", "--safety-net", help=_SAFETY_NET_HELP),
    pipeline_path: Path | None = typer.Option(None, "--pipeline", help="A published pipeline whose tagger the "
                                                                       "safety net runs too (may be the --bundle)."),
    pipeline_key: Path | None = typer.Option(None, "--pipeline-key", help="The public key that signed --pipeline "
                                                                         "(default: --provider-key; a pipeline the "
                                                                         "server published: server-signing.pub)."),
    review: Path | None = typer.Option(None, "--review", help="The safety net's review folder (BRAT: the notes with "
                                                              "flagged tokens, gold and flagged spans; replaced); "
                                                              "default: --out with the suffix .review."),
) -> None:
    """Export labeled notes as an encrypted, signed contribution of noisy vectors, tags and casing.

    Every gold PHI token is first replaced (by default by a realistic surrogate of its PHI type
    and shape; see --pseudonymization), so the vectors are computed from pseudonymized text; the
    header records the scheme and N, the encrypted part the re-identification bound of the export
    (printed here). The safety net
    (--safety-net) pseudonymizes the unlabeled tokens it takes for PHI too and lists them for
    review."""
    start_tensorflow()

    from deidpool.client.export import ExportSettings, check_draws, export_contribution, review_unlabeled_phi
    from deidpool.client.identity import institution_id
    from deidpool.contribution.container import PSEUDONYMIZATION_SCHEMES
    from deidpool.contribution.records import DTYPES
    from deidpool.corpus.formats import iter_corpus

    if dtype not in DTYPES:
        raise typer.BadParameter(f"choose one of {', '.join(DTYPES)}", param_hint="--dtype")
    if pseudonymization not in PSEUDONYMIZATION_SCHEMES:
        raise typer.BadParameter(f"choose one of {', '.join(PSEUDONYMIZATION_SCHEMES)}",
                                 param_hint="--pseudonymization")
    if safety_net not in SAFETY_NET_MODES:
        raise typer.BadParameter(f"choose one of {', '.join(SAFETY_NET_MODES)}", param_hint="--safety-net")
    try:
        check_draws(draws, pseudonymization)
        if draws > 1 and not accept_draw_narrowing:
            raise ValueError(f"{draws} draws of every sentence exclude up to {draws} values of each PHI token (a "
                             "surrogate is never its original), more than the re-identification bound counts: pass "
                             "--accept-draw-narrowing to export them anyway")
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--draws") from None
    if safety_net == "off" and (pipeline_path or review):
        raise typer.BadParameter("--pipeline and --review need the safety net on", param_hint="--safety-net")
    from deidpool.cli.corpus_commands import notes_language

    with clean_errors():
        language = language or notes_language(iter_corpus(notes, fmt, split=split))
    _check_language(language, safety_net != "off")
    review = None if safety_net == "off" else review or out.with_suffix(".review")
    pipeline_key = pipeline_key or provider_key
    with clean_errors():
        if safety_net == "review":
            bundle, _ = _open_bundle(bundle_path, provider_key, embeddings, load_embeddings=False)
            net = _safety_net(safety_net, language, pipeline_path, pipeline_key, embeddings, bundle, None,
                              iter_corpus(notes, fmt, split=split))
            flagged = review_unlabeled_phi(iter_corpus(notes, fmt, split=split), bundle, net, review)
            _echo_safety_net({**flagged.header(), **flagged.counts()}, review)
            typer.echo(f"nothing exported (--safety-net review): review {review}, then export with --safety-net "
                       "pseudonymize, or with --notes on the reviewed folder and --format brat")
            return
        signing_key = private_key(key, keys.SIGNING)
        institution = institution_id(key)
        server = keys.load_public_key(server_key, keys.ENCRYPTION)
        bundle, vectors = _open_bundle(bundle_path, provider_key, embeddings)
        net = _safety_net(safety_net, language, pipeline_path, pipeline_key, embeddings, bundle, vectors,
                          iter_corpus(notes, fmt, split=split))
        settings = ExportSettings(neighbours=neighbours, scheme=pseudonymization, language=language, draws=draws,
                                  dtype=dtype)
        header, summary = export_contribution(iter_corpus(notes, fmt, split=split), bundle, vectors, out, settings,
                                              institution=institution, signing_key=signing_key, server_key=server,
                                              safety_net=net, review=review)
    among = "by surrogates" if pseudonymization == "surrogates" else f"among N = {neighbours} {pseudonymization}"
    copies = f", {draws} draws of each sentence" if draws > 1 else ""
    typer.echo(f"wrote {header.sentences} sentences ({header.tokens} tokens) of {institution} to {out} "
               f"({out.stat().st_size:,} bytes), PHI pseudonymized {among}{copies}")
    _echo_safety_net({**header.safety_net, **summary["safety_net"]}, review)
    _echo_bound(summary["reidentification_bound"])


def _check_language(language: str, patterns: bool) -> None:
    """Refuse a --language the pattern layer does not know, when it runs (`patterns`)."""
    from deidpool.client.patterns import LANGUAGES

    if patterns and language not in LANGUAGES:
        raise typer.BadParameter(f"the pattern layer knows no language {language!r}; choose one of "
                                 f"{', '.join(LANGUAGES)}", param_hint="--language")


def _safety_net(mode: str, language: str, pipeline_path: Path | None, pipeline_key: Path, embeddings: str | None,
                bundle, vectors, notes: Iterable):
    """The export's safety net in `mode`: off, or the pattern layer for notes in `language`, the PHI
    memory of the labeled `notes` exported, and the pipeline at `pipeline_path` (verified with
    `pipeline_key`) with its embeddings (the bundle's `vectors` when they are the same, else loaded)."""
    from deidpool.client.memory import SAFETY_NET_PRECISION, remembered_phi
    from deidpool.client.patterns import patterns_for
    from deidpool.client.safety_net import OFF, SafetyNet
    from deidpool.representer.bundle import BundleError

    if mode == "off":
        return OFF
    patterns, memory = patterns_for(language), remembered_phi(notes, min_precision=SAFETY_NET_PRECISION)
    if pipeline_path is None:
        return SafetyNet(patterns, memory=memory)
    pipeline, _ = _open_bundle(pipeline_path, pipeline_key, None, load_embeddings=False)
    if not pipeline.is_pipeline:
        raise BundleError(f"{pipeline_path} is a representer bundle without a tagger, not a pipeline (--pipeline)")
    same = pipeline.manifest["embeddings"]["source_id"] == bundle.manifest["embeddings"]["source_id"]
    if not (same and vectors is not None):
        vectors = pipeline.load_embeddings(embeddings if same else None)
    return SafetyNet(patterns, pipeline, vectors, memory)


def _echo_safety_net(counts: dict, review: Path | None) -> None:
    """What the safety net flagged (its finders and `Flagged.counts`) and where its review folder is."""
    if not counts.get("finders"):
        typer.echo("safety net off: unlabeled PHI was not looked for")
        return
    categories = ", ".join(f"{category} {count}" for category, count in counts["categories"].items())
    typer.echo(f"safety net ({', '.join(counts['finders'])}): {counts['flagged_tokens']} unlabeled tokens flagged"
               f"{f' ({categories})' if categories else ''}; notes to review in {review}")


@client_app.command("inspect")
def inspect(
    contribution: Path = typer.Argument(..., help="A contribution file (.dpc)."),
    key: Path = typer.Option(..., "--key", help="The institution's public key (institution.pub)."),
    server_private_key: Path | None = typer.Option(
        None, "--server-private-key", help="The server's X25519 private key (server-encryption.key), to open "
                                           "the sealed summary too: the re-identification bound and what the "
                                           "safety net flagged."),
) -> None:
    """Print a contribution's header after checking its signature (no server key needed); with the
    server's private key, its sealed summary too, which depends on the original PHI and so is not
    in the header."""
    from deidpool.contribution.container import read_summary, verify_contribution

    with clean_errors():
        public_key = keys.load_public_key(key, keys.SIGNING)
        header = verify_contribution(contribution, public_key)
        summary = None if server_private_key is None else read_summary(
            contribution, keys.load_private_key(server_private_key, keys.ENCRYPTION), header)
    typer.echo(json.dumps(dataclasses.asdict(header), indent=2))
    typer.echo(f"signature: valid (institution key {keys.fingerprint(public_key)})")
    if summary is None:
        typer.echo("the re-identification bound and the safety net's counts are in the sealed summary, which "
                   "only the server's private key opens (--server-private-key)")
        return
    typer.echo(json.dumps(summary, indent=2))
    _echo_bound(summary.get("reidentification_bound", {}))


def _echo_bound(bound: dict) -> None:
    """The re-identification bound of a sealed summary as a table (nothing when it has none)."""
    from deidpool.pseudonymization.bound import format_bound

    if bound:
        typer.echo(format_bound(bound))


@client_app.command("upload")
def upload(
    contribution: Path = typer.Argument(..., help="A contribution file (.dpc)."),
    server: str = typer.Option(..., "--server", help="The pooling server's base URL."),
    retries: int = typer.Option(5, "--retries", min=0, help="Retries after network errors or busy answers."),
    key: Path = typer.Option(..., "--key", help="The institution's private key (institution.key): it signs the "
                                               "upload, and success is reported only once the server lists the "
                                               "contribution for the institution."),
    insecure: bool = typer.Option(False, ALLOW_INSECURE_HTTP, help=ALLOW_INSECURE_HTTP_HELP),
) -> None:
    """Send a contribution to the pooling server (safe to repeat: it deduplicates by content hash)."""
    from deidpool.cli.http import checked_server_url
    from deidpool.client.transport import upload_contribution

    with clean_errors():
        checked_server_url(server, insecure)  # before the key is read
        reply = upload_contribution(contribution, server, signing_key=private_key(key, keys.SIGNING), retries=retries,
                                    allow_insecure_http=insecure)
    typer.echo(f"uploaded {contribution} to {server}" + (f": {json.dumps(reply)}" if reply else ""))


@client_app.command("deidentify")
def deidentify(
    pipeline_path: Path = typer.Option(..., "--pipeline", help="A published pipeline (folder or .tar)."),
    provider_key: Path = typer.Option(..., "--provider-key", help="The pinned public key that signed the pipeline."),
    notes: Path = typer.Option(..., "--notes", help="Unlabeled notes: a .txt file or folder, or --notes-format's."),
    notes_format: str = typer.Option("text", "--notes-format", help="text, or any corpus format (spans ignored)."),
    out: Path = typer.Option(..., "--out", help="Output folder (a .jsonl file for --format json)."),
    fmt: str = typer.Option(..., "--format", help="brat, i2b2, json (PHI spans; brat with BRAT's annotation.conf "
                                                  "and visual.conf, ready for review) or text (notes with PHI "
                                                  "replaced)."),
    surrogate: bool = typer.Option(False, "--surrogate/--redact", help="For text: consistent surrogates instead "
                                                                       "of [**CATEGORY**] markers."),
    embeddings: str | None = typer.Option(None, "--embeddings", help=_EMBEDDINGS_HELP),
    patterns: bool = typer.Option(True, "--patterns/--no-patterns", help="Merge the spans of the high-precision "
                                  "pattern layer (dates, phone numbers, ages over 89, IDs, e-mail, URLs; "
                                  "client/patterns.py) with the tagger's, on the raw notes; --no-patterns: the "
                                  "tagger alone."),
    language: str = typer.Option("en", "--language", help="Language of the notes, for the pattern layer: en "
                                                          "(English) or es (Spanish)."),
    memory: Path | None = typer.Option(None, "--memory", help="The institution's PHI memory (`client remember`): "
                                                              "the PHI strings of its own labeled notes, found "
                                                              "again wherever they recur and merged like the "
                                                              "pattern layer."),
    stack: Path | None = typer.Option(None, "--stack", help="The site's stack for this pipeline (`client "
                                                            "personalize`): its own tagger combined with the "
                                                            "pipeline's at its operating point, its memory, and its "
                                                            "language and pattern layer (in place of --language, "
                                                            "--patterns and --memory)."),
) -> None:
    """Find PHI in unlabeled notes with a published pipeline, and write spans or de-identified notes."""
    _check_language(language, patterns)
    start_tensorflow()

    from deidpool.client.deidentify import (
        OUTPUT_FORMATS,
        PhiFinder,
        pipeline_patterns,
        read_notes,
        tag_labels,
        write_deidentified,
    )
    from deidpool.client.memory import load_memory, memory_patterns

    if fmt not in OUTPUT_FORMATS:
        raise typer.BadParameter(f"choose one of {', '.join(OUTPUT_FORMATS)}", param_hint="--format")
    if surrogate and fmt != "text":
        raise typer.BadParameter("--surrogate applies to --format text only", param_hint="--surrogate")
    if stack and memory:
        raise typer.BadParameter("a stack holds its own PHI memory", param_hint="--memory")
    with clean_errors():
        remembered = load_memory(memory) if memory else {}
        pipeline, vectors = _open_bundle(pipeline_path, provider_key, embeddings)
        if stack:
            from deidpool.client.stack import open_stack

            finder = open_stack(stack, pipeline, vectors)
        else:
            finder = PhiFinder(pipeline, vectors, (*(pipeline_patterns(pipeline, language) if patterns else ()),
                                                   *memory_patterns(remembered, sorted(tag_labels(pipeline.tags)))))
        found = finder.find(read_notes(notes, notes_format), progress=True)
        count = write_deidentified(found, out, fmt, surrogates=surrogate, labels=finder.labels)
    typer.echo(f"de-identified {count} notes to {out} ({fmt})")


@client_app.command("remember")
def remember(
    notes: Path = typer.Option(..., "--notes", help="The institution's PHI-labeled notes (file or folder, as "
                                                    "--format needs)."),
    fmt: str = typer.Option(..., "--format", help="Format of the notes: i2b2, meddocan, brat, physionet, conll, json."),
    split: str | None = typer.Option(None, "--split", help="Read only this named split (the nearest splits.json)."),
    out: Path = typer.Option(..., "--out", help="The PHI memory file to write (JSON, readable by its owner only)."),
    min_precision: float = typer.Option(MIN_PRECISION, "--min-precision", min=0.0, max=1.0,
                                        help="Keep a PHI string only where the notes label at least this share of "
                                             "its whole-word occurrences."),
) -> None:
    """Build the institution's PHI memory from its labeled notes, for `client deidentify --memory`.

    It holds the PHI strings of the notes as they are: keep it with the notes. Nothing of it is
    exported, published or printed (only counts)."""
    from deidpool.client.memory import remembered_phi, save_memory
    from deidpool.corpus.formats import read_corpus

    with clean_errors():
        documents = read_corpus(notes, fmt, split=split)
        memory = remembered_phi(documents, min_precision=min_precision)
        save_memory(memory, out)
    labels = Counter(entry["label"] for entry in memory.values())
    typer.echo(f"remembered {len(memory)} PHI strings of {len(documents)} notes in {out} (owner-only): "
               + ", ".join(f"{label} {count}" for label, count in labels.most_common()))


@client_app.command("contributions")
def contributions(
    server: str = typer.Option(..., "--server", help="The pooling server's base URL."),
    key: Path = typer.Option(..., "--key", help="The institution's private key (institution.key)."),
    insecure: bool = typer.Option(False, ALLOW_INSECURE_HTTP, help=ALLOW_INSECURE_HTTP_HELP),
) -> None:
    """List this institution's contributions stored on the server (a request signed with its key)."""
    from deidpool.cli.http import ServerConnection
    from deidpool.client.identity import institution_id
    from deidpool.contribution.signed_requests import signed_headers, url_host

    path = "/api/contributions"
    with clean_errors(), ServerConnection(server, allow_insecure_http=insecure) as connection:
        headers = signed_headers(private_key(key, keys.SIGNING), institution_id(key), "GET", path,
                                 host=url_host(server))
        rows = connection.call("GET", path, headers=headers)
    typer.echo(f"{'received':25}  {'sentences':>9}  {'tokens':>9}  {'representer':20}  sha256")
    for row in rows:
        typer.echo(f"{row['received']:25}  {row['sentences']:>9}  {row['tokens']:>9}  {row['representer_id']:20}  "
                   f"{row['sha256']}")
    typer.echo(f"{len(rows)} contributions")


@client_app.command("download")
def download(
    server: str = typer.Option(..., "--server", help="The pooling server's base URL."),
    representer: bool | None = typer.Option(None, "--representer/--pipeline", show_default=False, help="The "
                                            "current representer bundle (signed by the provider) or the latest "
                                            "published pipeline (signed by the server)."),
    out: Path = typer.Option(..., "--out", help="The bundle file to write (.tar)."),
    provider_key: Path | None = typer.Option(None, "--provider-key", help="The pinned provider public key "
                                                                          "(needed for --representer)."),
    server_key: Path | None = typer.Option(None, "--server-key", help="The server's signing public key "
                                           "(server-signing.pub) for --pipeline; fetched from the server if absent."),
    insecure: bool = typer.Option(False, ALLOW_INSECURE_HTTP, help=ALLOW_INSECURE_HTTP_HELP),
) -> None:
    """Download a bundle from the pooling server and verify its signature (the file is removed if it fails)."""
    from deidpool.cli.http import ServerConnection
    from deidpool.representer.bundle import open_bundle

    if representer is None:
        raise typer.BadParameter("choose --representer or --pipeline", param_hint="--representer/--pipeline")
    if representer and provider_key is None:
        raise typer.BadParameter("a representer bundle is verified with the provider key", param_hint="--provider-key")
    with clean_errors(), ServerConnection(server, allow_insecure_http=insecure) as connection:
        if representer:
            signer = keys.load_public_key(provider_key, keys.SIGNING)
        elif server_key is not None:
            signer = keys.load_public_key(server_key, keys.SIGNING)
        else:
            signer = keys.public_key_from_pem(connection.call("GET", "/api/keys")["signing_public_key"], keys.SIGNING,
                                              "the server's signing key")
            typer.echo(f"verifying with the server's signing key {keys.fingerprint(signer)} as the server reports it; "
                       "compare it with the coordinator's, or pass --server-key")
        connection.download("/api/representers/current/bundle" if representer else "/api/pipelines/latest/bundle",
                            out)
        try:
            bundle = open_bundle(out, signer)
        except BaseException:
            out.unlink()
            raise
    typer.echo(f"downloaded {bundle.manifest['kind']} {bundle.representer_id} to {out} "
               f"(signature valid, key {keys.fingerprint(signer)})")


@client_app.command("server-keys")
def server_keys(
    server: str = typer.Option(..., "--server", help="The pooling server's base URL."),
    out: Path = typer.Option(..., "--out", help="Folder for server-encryption.pub and server-signing.pub."),
    insecure: bool = typer.Option(False, ALLOW_INSECURE_HTTP, help=ALLOW_INSECURE_HTTP_HELP),
) -> None:
    """Save the server's public keys (export encrypts to server-encryption.pub; pipelines are
    signed by server-signing.pub); compare the printed fingerprints with the coordinator's."""
    from deidpool.cli.http import ServerConnection

    with clean_errors(), ServerConnection(server, allow_insecure_http=insecure) as connection:
        reply = connection.call("GET", "/api/keys")
        loaded = {kind: keys.public_key_from_pem(reply[f"{kind}_public_key"], kind, f"the server's {kind} key")
                  for kind in (keys.ENCRYPTION, keys.SIGNING)}
    out.mkdir(parents=True, exist_ok=True)
    for kind, key in loaded.items():
        path = out / f"server-{kind}.pub"
        path.write_text(reply[f"{kind}_public_key"])
        typer.echo(f"wrote {path} (fingerprint {keys.fingerprint(key)})")
