"""Privacy audits of a frozen representer (docs/method.md, Evaluation): fresh and continued
adversaries, inversion (A1) and lookup (A2) attacks, each also run on the positive controls
(raw embeddings, the representer after P1), the partner-only floor (an adversary that reads
only the partner text the target shares and must stay at chance), with a verdict and a
JSON/Markdown/PNG report; on the export path, beside the inversion, the re-identification bound
(`deidpool.pseudonymization.bound`) of the tokens it is scored on."""

from __future__ import annotations

import json
from collections.abc import Collection
from functools import partial
from pathlib import Path

from deidpool.adversary.inversion import context_only_inversion, frequency_baseline, inversion_attack
from deidpool.adversary.lookup import lookup_attack
from deidpool.adversary.models import DEFAULT_UNITS, POOLED, PartnerOnlyProbe
from deidpool.adversary.pairs import PairSource
from deidpool.adversary.procedures import AdversaryTraining, automatic_passes, build_adversary
from deidpool.adversary.verdicts import (
    BARE_PATH,
    BROKEN,
    CHANCE,
    CHANCE_BOUND,
    CONTROL_THRESHOLD,
    EXPORT_PATH,
    FAMILY_ERROR,
    HELD_OUT_DRAWS,
    INCONCLUSIVE,
    chance_rule,
    chance_verdict,
    cluster_design_effect,
    worst_verdict,
)
from deidpool.pseudonymization.bound import reidentification_bound
from deidpool.representer.dataset import BATCH_SIZE
from deidpool.representer.noise import noise_free_copy
from deidpool.representer.progress import progress_bar
from deidpool.representer.training import _write_config, _write_json, run_training

FLOOR = "floor/partner-only"  # the attack on the partners alone: neither a target attack nor a control
# On the export path, the lookup attack also runs on the pseudonymized text itself, as if it were shared
# in the clear: what pseudonymization alone leaves to a two-candidate test (a reference, not in the verdict).
SHARED_TEXT = "shared text"
# An audit's parts (`run_audit`'s `parts`) in two shares of about equal training time on the demo, for
# two processes (`runs.audit_run` with workers=2): the target's adversaries and inversion, and the rest
# (with every lookup, so that the run that reports only reads results).
PART_SHARES = (("target/fresh", "target/continued", "inversion/target"),
               ("raw/fresh", "p1/fresh", FLOOR, "inversion/raw", "inversion/p1", "inversion/context-only",
                "lookup/target", "lookup/raw", "lookup/p1", f"lookup/{SHARED_TEXT}"))


def raw_embeddings(inputs, training=False):
    """The identity representer: the attack on raw embeddings (a positive control)."""
    return inputs["embeddings"]


def attacker_reference(model):
    """What the attacker computes the sentences it knows with: the representer with its noise
    off (it is public), the identity for raw embeddings."""
    return model if model is raw_embeddings else noise_free_copy(model)


def head_accuracies(record: dict, prefix: str = "val_accuracy") -> dict[str, float]:
    """The accuracy of every output an adversary's history `record` has (`prefix` for "combined",
    `prefix`_t1 for "t1", ...: a `CombinedAdversary` has three, a `PartnerOnlyProbe` one); another
    `prefix` reads another metric of every output ("val_design_effect")."""
    return {key[len(prefix):].lstrip("_") or "combined": value for key, value in record.items()
            if key.startswith(prefix)}


def best_accuracy(record: dict) -> float:
    """The best output's accuracy in a record of an audit's history.json."""
    return max(head_accuracies(record, "accuracy").values())


def control_broken(record: dict) -> bool:
    """Whether an epoch's record of an attack on a positive control has an output at
    CONTROL_THRESHOLD or above: the control is broken, its attack shown strong, and trains no more."""
    return max(head_accuracies(record).values()) >= CONTROL_THRESHOLD


def attack_result(final: dict, trials: int, tests: int = 1) -> dict:
    """An adversary attack from its last epoch's validation metrics: every output it has
    judged by `chance_verdict` as one of the `tests` outputs the audit's verdict reads, on its
    effective trials (its `val_design_effect`; 1 in a record from before it existed); the attack
    reads as its worst output (`worst_verdict`)."""
    effects = head_accuracies(final, "val_design_effect")
    heads = {head: chance_verdict(rate, trials, tests, effects.get(head, 1.0))
             for head, rate in head_accuracies(final).items()}
    return {"accuracy": max(h["rate"] for h in heads.values()), "heads": heads,
            "verdict": worst_verdict(h["verdict"] for h in heads.values())}


def two_way_lookup(result: dict, tests: int = 1) -> dict:
    """A lookup attack's result judged on both directions (`both_rate`: each candidate the true one
    half the time, over twice the trials), its one-way rate kept as `original_rate`. The one-way test
    always hands the original's export, so an attacker's preference for one kind of candidate
    whatever the export (a real PHI word against a drawn one) moves it either way without the
    export revealing anything; in both directions that preference cancels and only what the
    export reveals moves the rate from 0.5. Judged on the effective trials, both directions of a
    sentence one cluster (`sentence_successes`, left out of the result; without them, as in results
    from before, on the raw trials). `tests` as for `attack_result`."""
    clustered = result.get("sentence_successes")
    effect = 1.0 if clustered is None else cluster_design_effect(clustered, [2 * result["draws"]] * len(clustered))
    return {**{key: value for key, value in result.items() if key != "sentence_successes"},
            "original_rate": result["rate"], **chance_verdict(result["both_rate"], 2 * result["trials"], tests, effect)}


def judged(name: str) -> bool:
    """Whether the verdict reads the attack `name` (an attack's, "target/fresh", or a subject's,
    "target"): the target's and the floor's, not the controls'; they read what the target shares."""
    return name.split("/")[0] == "target" or name == FLOOR


def overall_verdict(adversaries: list[str], lookup: str, floor: str, controls: dict[str, bool]) -> tuple[str, str]:
    """The audit's verdict and why, from the verdicts of the adversary attacks on the target, of
    the lookup attack on it and of the partner-only floor, and from whether each positive
    control was broken (accuracy >= CONTROL_THRESHOLD), in this order:
    "broken" when the lookup attack breaks the target (it compares representations and learns
    nothing, so implausible fake partners cannot help it); "inconclusive" when the floor is
    above chance (fake partners are recognisable by themselves, so the adversaries' results
    say nothing about the representer); "broken" when an adversary breaks the target;
    "inconclusive" when the held-out answers of an attack on the target, the lookup's or the
    floor's cannot rule out an attacker at CHANCE_BOUND (`chance_verdict`); "consistent with
    chance" only if every positive control was broken, else "inconclusive"."""
    if lookup == BROKEN:
        return BROKEN, "the lookup attack A2 beats chance on the target"
    if floor == BROKEN:
        return INCONCLUSIVE, ("the partner-only floor beats chance: fake partners are recognisable by themselves "
                              "(implausible pseudonyms), so the adversaries' results say nothing about the representer")
    if BROKEN in adversaries:
        return BROKEN, "an adversary beats chance on the target"
    if INCONCLUSIVE in (*adversaries, lookup, floor):
        return INCONCLUSIVE, (f"too few held-out answers: an output's interval holds 0.5 but reaches past "
                              f"{1 - CHANCE_BOUND:.2f}-{CHANCE_BOUND:.2f}, so an attacker that good is not ruled out")
    failed = [name for name, succeeded in controls.items() if not succeeded]
    if not controls or failed:
        return INCONCLUSIVE, (f"positive controls not broken ({', '.join(failed)})" if failed else
                              "no positive control") + ": the attacks are not shown to be strong"
    return CHANCE, "every attack on the target and the floor at chance, every positive control broken"


def run_audit(representer, train: PairSource, test: PairSource, out_dir: str | Path, *, epochs: int,
              adversary=None, p1_representer=None, units: int = DEFAULT_UNITS, seed: int = 0,
              passes: int | None = None, inversion_epochs: int | None = None, export_path: bool = False,
              held_out_draws: int = HELD_OUT_DRAWS, config: dict | None = None, progress: bool = True,
              parts: Collection[str] | None = None, **settings) -> dict | None:
    """Attack the frozen `representer` with pairs from `train`, judged on held-out pairs from
    `test` (sentences not used in attack training), and write the report to `out_dir`.

    Every adversary and the lookup are judged on `held_out_draws` draws of pairs of the `test`
    sentences (other real/fake labels, other fakes and, on the export path, other pseudonyms):
    one draw of a few hundred pairs leaves each output's rate a standard deviation of about 0.04
    from the truth, so a representer exactly at chance would fail the 0.55 rule on one of its
    eight target outputs in about half of all audits.

    With `export_path`, the target is what `client export` shares: every attack on it reads the
    representations of freshly pseudonymized copies (`PairSource(export_path=True)`, N of the
    pairs' pseudonymizer), and succeeds only against the original sentence or token. The
    positive controls stay on the bare path, where the attacks must succeed; the floor reads the
    partner text the target's path shares (the pseudonymized copy on the export path). The
    attacker computes what it knows itself (the original's side of a pair, the lookup's stored
    representations) with the representer's noise off (`attacker_reference`); only what is
    shared carries noise.

    Attacks, each for `epochs` epochs of `passes` fresh draws of pairs (None: `automatic_passes`;
    an attack on a positive control stops after the first epoch that breaks it, `control_broken`):
    fresh T1/T2 of the POOLED design (adversary.models; the stronger one: the paper's design
    reaches 0.67 where it reaches 0.86 on the demo's P1 control), and the trained `adversary`,
    continued, when given, on the target and on the
    positive controls (raw embeddings, `p1_representer` when given), and the partner-only floor
    `FLOOR`; the inversion attack A1 (scored on the hidden PHI tokens, beside its two baselines)
    and the lookup attack A2 on the target and the controls; every inversion trains for
    `inversion_epochs` epochs (None: `epochs` x `passes`, as many draws as an adversary sees).
    On the export path the report's
    "bound" is `reidentification_bound` of the hidden PHI tokens of `test` (those the inversion
    is scored on), under `test`'s pseudonymizer (the frequency prior in its language). out_dir gets config.json,
    metrics.json (the report), history.json (held-out accuracies per epoch), report.md,
    accuracy.png, one run_training folder per adversary attack under attacks/ and one inverter
    checkpoint per inversion under inversion/ (checkpoints: an interrupted audit resumes).
    `settings` are `AdversaryTraining`'s optimizer settings.

    With `parts` (names of attacks, "target/fresh", ..., of inversions, "inversion/target", ...,
    "inversion/context-only", and of lookups, "lookup/target", ...: `PART_SHARES`), only those are
    trained or computed, into their checkpoints (an inversion's and a lookup's result kept as JSON
    under inversion/ and lookup/), and nothing is returned: another process can run some of an
    audit while this one runs others, and a run without `parts` then resumes them all, reads the
    kept results and writes the report (`runs.audit_run`).
    """
    out_dir = Path(out_dir)
    if passes is None:
        passes = automatic_passes(len(train), settings.get("batch_size", BATCH_SIZE))
    if inversion_epochs is None:
        inversion_epochs = epochs * passes
    embedding_dim = test.pseudonymizer.embeddings.dim
    trials = len(test) * held_out_draws

    def wanted(part: str) -> bool:
        return parts is None or part in parts

    if parts is None:  # a part's process leaves the audit's own files to the run that reports
        _write_config(out_dir, {"epochs": epochs, "passes": passes, "inversion_epochs": inversion_epochs,
                                "units": units,
                                "attacker_design": POOLED, "seed": seed,
                                "neighbours": test.pseudonymizer.neighbours, "export_path": export_path,
                                "train_pairs": len(train), "held_out_pairs": trials, "held_out_draws": held_out_draws,
                                **settings, **(config or {})})
    subjects = {"target": representer, "raw": raw_embeddings}
    if p1_representer is not None:
        subjects["p1"] = p1_representer
    exported = tuple(PairSource(pairs.sentences, pairs.pseudonymizer, export_path=True, chars=pairs.char_width > 0)
                     for pairs in (train, test)) if export_path else (train, test)

    def pairs_of(name: str) -> tuple[PairSource, PairSource]:
        return exported if judged(name) else (train, test)

    references = {name: attacker_reference(model) for name, model in subjects.items()}
    attacks = {f"{name}/fresh": (name, build_adversary(_dim(model, embedding_dim), embedding_dim, units, design=POOLED))
               for name, model in subjects.items()}
    if adversary is not None:
        attacks["target/continued"] = ("target", adversary)
    attacks[FLOOR] = ("raw", build_adversary(embedding_dim, embedding_dim, units, kind=PartnerOnlyProbe, design=POOLED))
    unknown = sorted(set(parts or ()).difference(*PART_SHARES))
    if unknown:
        raise ValueError(f"no such part of this audit: {', '.join(unknown)}")
    history, finals = {}, {}
    for name, (subject, attacker) in attacks.items():
        if not wanted(name):
            continue
        run_dir = out_dir / "attacks" / name.replace("/", "-")
        procedure = AdversaryTraining(subjects[subject], attacker, passes, reference=references[subject],
                                      held_out_draws=held_out_draws, **settings)
        run_training(procedure, *pairs_of(name), run_dir, max_epochs=epochs, patience=epochs, seed=seed,
                     progress=progress, stop_when=None if judged(name) else control_broken)
        records = json.loads((run_dir / "history.json").read_text())
        history[name] = [{"epoch": r["epoch"], **{key[len("val_"):]: value for key, value in r.items()
                                                   if key.startswith("val_accuracy")}} for r in records]
        finals[name] = records
    inverters = {"epochs": inversion_epochs, "units": units, "seed": seed, "progress": progress, **settings}
    computed = {f"inversion/{name}": partial(inversion_attack, model, *pairs_of(name), label=name,
                                             checkpoint=out_dir / "inversion" / f"{name}.npz", **inverters)
                for name, model in subjects.items()}
    computed["inversion/context-only"] = partial(context_only_inversion, train, test, label="context-only",
                                                 checkpoint=out_dir / "inversion" / "context-only.npz", **inverters)
    looked_up = {**subjects, **({SHARED_TEXT: raw_embeddings} if export_path else {})}
    computed.update({f"lookup/{name}": partial(lookup_attack, model, exported[1] if name == SHARED_TEXT
                                               else pairs_of(name)[1], seed, reference=references.get(name, model),
                                               draws=held_out_draws)
                     for name, model in looked_up.items()})
    depends_on = {"inversion": {key: value for key, value in inverters.items() if key != "progress"},
                  "lookup": {"seed": seed, "draws": held_out_draws}}

    def outcome(part: str) -> dict:
        """The result of an inversion or a lookup, computed once and kept in `out_dir` (a part's
        process computes it, the reporting run reads it)."""
        kind, _, name = part.partition("/")
        return _kept(out_dir / kind / f"{name.replace(' ', '-')}.json", depends_on[kind], computed[part])

    if parts is not None:
        for part in computed:
            if wanted(part):
                outcome(part)
        return None
    # every output the verdict reads is one test of a family (adversary.verdicts.family_z): the
    # heads of the attacks on the target and of the floor, and the lookup on the target
    tests = sum(len(head_accuracies(records[-1])) for name, records in finals.items() if judged(name)) + 1
    results = {name: {**attack_result(records[-1], trials, tests), "epochs": len(records)}
               for name, records in finals.items()}
    targets = [result["verdict"] for name, result in results.items() if name.startswith("target/")]
    controls = {name: result["accuracy"] >= CONTROL_THRESHOLD for name, result in results.items()
                if not judged(name)}
    for name, succeeded in controls.items():
        results[name]["control_succeeded"] = succeeded
    # the reporting run computes what no part's process kept (a lookup or an inversion not run in
    # parts, the baselines, the bound): a line every 30 s shows it is alive
    steps = len(looked_up) + len(subjects) + 2 + 2 * export_path
    bar = progress_bar(total=steps, desc="audit: reporting", unit=" steps", disable=not progress)

    def step(value):
        bar.update()
        return value

    with bar:
        lookup = {name: step(two_way_lookup(outcome(f"lookup/{name}"), tests)) for name in looked_up}
        inversion = {name: step(outcome(f"inversion/{name}")) for name in subjects}
        baselines = {"frequency": step(frequency_baseline(train, test)),
                     "context-only": step(outcome("inversion/context-only"))}
        if export_path:  # the bare path pseudonymizes nothing
            bound = step(reidentification_bound(hidden_phi(test), test.pseudonymizer,
                                                language=test.pseudonymizer.language))
            symmetry = step(test.fake_symmetry(seed))
    verdict, reason = overall_verdict(targets, lookup["target"]["verdict"], results[FLOOR]["verdict"], controls)
    report = {"verdict": verdict, "verdict_reason": reason, "path": EXPORT_PATH if export_path else BARE_PATH,
              "epochs": epochs, "passes": passes, "inversion_epochs": inversion_epochs, "attacker_design": POOLED,
              "neighbours": test.pseudonymizer.neighbours,
              "held_out_pairs": trials, "held_out_sentences": len(test), "held_out_draws": held_out_draws,
              "judged_outputs": tests, "chance_bound": CHANCE_BOUND,
              "chance_interval": [1 - CHANCE_BOUND, CHANCE_BOUND], "control_threshold": CONTROL_THRESHOLD,
              "attacks": results,
              "lookup": lookup, "inversion": inversion, "inversion_baselines": baselines,
              "one_over_n": 1 / test.pseudonymizer.neighbours}
    if export_path:
        report["bound"], report["fake_symmetry"] = bound, symmetry
    _write_json(out_dir / "history.json", history)
    _write_json(out_dir / "metrics.json", report)
    (out_dir / "report.md").write_text(format_report(report))
    plot_accuracy(history, out_dir / "accuracy.png")
    return report


def _kept(path: Path, depends_on: dict, compute) -> dict:
    """`compute()`, kept in `path` with what it `depends_on`: read back while that is the same."""
    if path.exists():
        kept = json.loads(path.read_text())
        if kept["depends_on"] == depends_on:
            return kept["result"]
    result = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_json(path, {"depends_on": depends_on, "result": result})
    return result


def hidden_phi(pairs: PairSource) -> list[tuple]:
    """The bound's tokens (`Pseudonymizer.phi_tokens`: (word, category), under "surrogates" with
    their shape) of every hidden PHI token of `pairs` (`PairSource.positions`): the tokens the
    inversion attack is scored on."""
    return [token for sentence, positions in zip(pairs.sentences, pairs.positions)
            for token in pairs.pseudonymizer.phi_tokens([t.text for t in sentence.tokens], sentence.tags, positions)]


def _rate(result: dict, key: str) -> str:
    """A one-way lookup rate of the report; audits judged before the two-way verdict lack it."""
    return f"{result[key]:.3f}" if key in result else "-"


def _answers(result: dict) -> str:
    """A verdict's answers, and its effective answers where it has them (reports from before lack them)."""
    effective = f" ({result['effective_trials']:.0f})" if "effective_trials" in result else ""
    return f"{result.get('trials', '-')}{effective}"


def _dim(representer, embedding_dim: int) -> int:
    return embedding_dim if representer is raw_embeddings else int(representer.output.shape[-1])


def format_report(report: dict) -> str:
    """The audit report as Markdown."""
    def interval(result):
        return f"[{result['ci'][0]:.3f}, {result['ci'][1]:.3f}]"

    floor = report["attacks"][FLOOR]
    effective = (" on its effective answers (its answers over their design effect: the variance of its rate over "
                 "the held-out sentences, whose answers every draw repeats, against the binomial one)"
                 if "design_effect" in floor["heads"]["combined"] else "")
    confidence = f"{floor['heads']['combined'].get('confidence', 0.95):.2%}".replace(".00%", "%")
    path = ("the export path: the target's attacks read representations of freshly pseudonymized copies "
            "and must recover the original" if report.get("path") == EXPORT_PATH else "the bare representer")
    lines = [f"# Privacy audit: {report['verdict']}", "", f"Why: {report['verdict_reason']}.", "",
             f"Attacked: {path}; positive controls on the bare path. The attacker computes the sentences it "
             "knows (the original of each pair, the lookup's stored representations) with the public "
             "representer's noise off; only what is shared is noisy.", "",
             f"{report['epochs']} epochs of attack training ({report['passes']} draws of pairs each; fresh attackers "
             f"and the floor of the {report.get('attacker_design', 'paper')} design, adversary.models), "
             f"N = {report['neighbours']}, "
             f"{report['held_out_pairs']} held-out pairs ({report.get('held_out_draws', 1)} draws over the held-out "
             f"sentences). {chance_rule(report, confidence, effective)}"
             + (f" (the confidence of one of the {report['judged_outputs']} outputs the verdict reads, Bonferroni: "
                f"a representer at chance reads broken in at most {FAMILY_ERROR:.0%} of audits)"
                if "judged_outputs" in report else "")
             + "; positive controls "
             f"must reach {report['control_threshold']} (their attacks stop after the first epoch that does).", "",
             "## Adversaries (held-out accuracy after the last epoch)", "",
             f"| attack | output | accuracy | {confidence} CI | answers (effective) | verdict |",
             "|---|---|---|---|---|---|"]
    for name, result in report["attacks"].items():
        for head, value in result["heads"].items():
            lines.append(f"| {name} | {head} | {value['rate']:.3f} | {interval(value)} | {_answers(value)} "
                         f"| {value['verdict']} |")
    controls = [f"{name}: {'succeeded' if r['control_succeeded'] else 'FAILED'} (best {r['accuracy']:.3f}"
                + (f" after epoch {r['epochs']})" if "epochs" in r else ")")
                for name, r in report["attacks"].items() if "control_succeeded" in r]
    lines += ["", "Positive controls: " + "; ".join(controls) + ".", "",
              f"Partner-only floor ({FLOOR}, the embeddings of the partner text the target shares alone, no "
              "representer): "
              f"{floor['accuracy']:.3f} {interval(floor['heads']['combined'])}, {floor['verdict']}. It must stay at "
              "chance: above it, fake partners are recognisable by themselves and the adversaries' results say "
              "nothing about the representer.", "",
              "## Lookup attack A2 (fresh representation closer to its own stored one)", "",
              "The verdict reads both directions together: the two-candidate test with each candidate the true "
              "one half the time. Handed only the original's export (or only the fake sentence's), the lookup's "
              "rate also moves with a preference for one kind of candidate whatever the export (the two "
              "one-way rates then sum to 1), which reveals nothing about the export.", "",
              f"| representation | both directions | {confidence} CI | answers (effective) | verdict "
              "| original's export | fake's export |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {name} | {r['rate']:.3f} | {interval(r)} | {_answers(r)} | {r['verdict']} "
              f"| {_rate(r, 'original_rate')} | {_rate(r, 'fake_rate')} |" for name, r in report["lookup"].items()]
    if SHARED_TEXT in report["lookup"]:
        lines += ["", f"{SHARED_TEXT}: the lookup on the pseudonymized text itself (no representer), a reference "
                  "that is not part of the verdict: what pseudonymization alone leaves to a two-candidate test, "
                  "and the representer must hide on top (with neighbour draws a surrogate lies nearer its "
                  "original than a neighbour of it)."]
    lines += ["", "## Inversion attack A1 (hidden PHI tokens recovered)", "",
              "Scored on the PHI tokens the method hides (replaceable, with a pseudonym of another vector), not on "
              "punctuation or words without a vector of their own (no vocabulary row to rank). The two baselines "
              "look at no representation: frequency guesses the most frequent hidden training PHI words of the "
              "token's category, context-only is the inverter on raw embeddings with the hidden tokens zeroed. "
              "They, not 1/N, are the level an inversion must beat. Every inverter trained "
              f"{report.get('inversion_epochs', report['epochs'] * report['passes'])} epochs.", "",
              "| inverter | hidden PHI tokens | top-1 | top-10 |", "|---|---|---|---|"]
    rows = {**report["inversion"], **{f"baseline: {name}": r for name, r in report["inversion_baselines"].items()}}
    lines += [f"| {name} | {r['tokens']} | {_share(r['top1'])} | {_share(r['top10'])} |" for name, r in rows.items()]
    lines += ["", f"For reference only, not a chance level: 1/N = {report['one_over_n']:.4f}."]
    if "fake_symmetry" in report:
        lines += ["", _symmetry_note(report["fake_symmetry"])]
    if "bound" in report:
        bound = report["bound"]["overall"]
        within = report["inversion"]["target"]["top1"] <= bound["mean_success"]["empirical"]
        lines += ["", f"Re-identification bound over the same {bound['hidden']} hidden PHI tokens "
                  "(pseudonymization.bound): mean success of the best attacker that learns each token's surrogate "
                  "exactly, its category and casing, under each prior.", "", "| prior | mean success |", "|---|---|"]
        lines += [f"| {prior} | {_share(bound['mean_success'][prior])} |" for prior in report["bound"]["priors"]]
        lines += ["", "The inversion's top-1 is within the bound when it is at most the empirical-prior mean (the "
                  f"export's own PHI distribution): the target's is {'within' if within else 'NOT within'} it."]
    return "\n".join(lines) + "\n"


def _share(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def _symmetry_note(symmetry: dict) -> str:
    """What the export path's pair attacks can measure, from `PairSource.fake_symmetry`."""
    counts = f"{symmetry['same_candidates']} of {symmetry['fakes']} fake replacements drawn have exactly their " \
             "original's candidates"
    if symmetry["fakes"] and symmetry["same_candidates"] == symmetry["fakes"]:
        return (f"Fake pairs: {counts}, so the exported copies of a real and of a fake pair are identically "
                "distributed: every pair attack's expected rate on the target is exactly 0.5, whatever the "
                "representer does. Here the attacks test the implementation (a leak through casing or sentence "
                "shape would show), not the representer; a rate over the bound is chance or such a leak. What the "
                "export reveals is the candidate set itself: see the bound.")
    return (f"Fake pairs: {counts}; for the others a real and a fake pair's exported copies draw from different "
            "sets, and the attacks measure what the representer lets through of that difference.")


def plot_accuracy(history: dict, path: Path) -> None:
    """One PNG: the best output's held-out accuracy per epoch for every attack."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(6, 4))
    for name, records in history.items():
        accuracy = [best_accuracy(r) for r in records]
        axes.plot([r["epoch"] for r in records], accuracy, marker="o", label=name)
    axes.axhline(0.5, color="grey", linestyle="--", label="chance")
    axes.axhline(CONTROL_THRESHOLD, color="grey", linestyle=":", label="control threshold")
    axes.set(xlabel="epoch", ylabel="held-out accuracy (best output)", ylim=(0, 1))
    axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
