"""Validation entry: self-attention as an attractor network (see docs/attractor.md).

Trains :class:`replica_mlm.AttractorNetwork` with the local rule on scikit-learn's 8 x 8 digits
(pixels as unit vectors of R^2, 2 x 2 patches as tokens) and on Gaussian Potts sequences, runs the
recurrent dynamics from corrupted inputs (masked tokens, pixel noise) on training and held-out
test inputs, and writes figures (PNG and PDF) and ``attractor.json`` into ``out``.

Transient-memory criterion (stated in standard errors, two-sided; see
:mod:`replica_mlm.attractor.transients`): the best step t* in the window is chosen on a random half
of the inputs; on the other half the paired gains of t* over the corrupted input (t = 0), over
predicting the mean training image, and over the state at t = 100 must each exceed 3 standard
errors. The same held-out test on the centred correlation with the nearest training image asks
whether the state becomes more like one stored image than the input was, and then less. A fourth
reference asks whether the transient is more than a blur: the corrupted input shrunk toward the
mean training image by one factor fitted on corrupted training images (``beyond_shrinkage``). A
fifth asks whether it carries more than the pixel marginals (``beyond_structureless``): the same
training on the training images with every pixel shuffled independently across images, run on the
same corrupted inputs. Measured (quick mode): that structureless control reaches 99 % of the trained
network's gain over the corrupted input for both tasks, and passes the transient, recall and
lifetime checks much as the trained network does; the trained network beats it by 0.0003 and
0.0002 in mean squared pixel error (0.4-0.5 % of the error), significant only because the two
networks' errors are almost equal input by input (tests/test_attractor_checks.py).

Settings. ``weight_decay = 0.1`` and ``gamma = 0.8`` (instead of the library defaults 1e-3 and
0.5) are the configuration of the lifetime scan (``quick=False``) whose transients last longest
while their best error stays as low; with the library defaults they last about 2 steps. The scan
shows what this is: smaller couplings and a larger self-weight slow the dynamics down, so the
transient forms later and lasts longer in proportion (the lifetime stays between 0.7 and 1.9
times the step of the best state); no setting tried lengthens the transient relative to the time
it takes to form. For masked inputs the best state is worse than the corrupted input shrunk toward
the mean training image, and it is not closer to any one stored image than the input was (the
checks ``beyond_shrinkage.masked`` and ``recall.masked`` fail); for noisy inputs both hold.
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from replica_mlm._base.io import write_json
from replica_mlm._base.pool import Task, run_tasks
from replica_mlm.attractor.experiments import digits_experiment
from replica_mlm.attractor.measurements import AttractorSettings
from replica_mlm.attractor.potts_sequences import potts_experiment
from replica_mlm.validation.attractor_plots import (
    _plot_errors,
    _plot_examples,
    _plot_lifetimes,
    _plot_potts,
    _plot_scan,
)
from replica_mlm.validation.report import Check, Section, atomic_write_text

__all__ = ["DEFAULT_SETTINGS", "digits_checks", "lifetime_scan", "potts_checks", "run"]

_Z = 3.0
_MIN_LIFETIME = 5.0

#: settings of the validation (module docstring)
DEFAULT_SETTINGS = AttractorSettings(weight_decay=0.1, gamma=0.8, window=(1, 50))

#: the lifetime scan of the full mode: one factor at a time around DEFAULT_SETTINGS
_SCAN = (
    ("default", {}),
    ("library defaults (wd 1e-3, gamma 0.5)", {"weight_decay": 1e-3, "gamma": 0.5}),
    ("gamma 0.5", {"gamma": 0.5}),
    ("gamma 0.9", {"gamma": 0.9}),
    ("gamma 0", {"gamma": 0.0}),
    ("weight decay 1e-3", {"weight_decay": 1e-3}),
    ("weight decay 1", {"weight_decay": 1.0}),
    ("beta 0.5", {"beta": 0.5}),
    ("beta 4", {"beta": 4.0}),
    ("vMF normalisation", {"normalisation": "vmf"}),
    ("patch 2x1 (N 32)", {"patch": (2, 1)}),
    ("patch 4x4 (N 4)", {"patch": (4, 4)}),
    ("100 stored images", {"n_train": 100}),
    ("1400 stored images", {"n_train": 1400}),
)


#: data sizes of each configuration of the lifetime scan (full mode)
_SCAN_SIZES = {"n_train": 600, "n_test": 200, "n_eval": 200}


def _sizes(quick: bool) -> tuple[dict, dict]:
    if quick:
        return (
            {"n_train": 600, "n_test": 200, "n_eval": 200},
            {"L": 20, "n_train": 1000, "n_test": 1000, "n_eval": 200},
        )
    return (
        {"n_train": 1400, "n_test": 397, "n_eval": 397},
        {"L": 20, "n_train": 4000, "n_test": 4000, "n_eval": 1000},
    )


def _memory_check(name: str, mem, what: str) -> Check:
    z = mem.margins()
    return Check(
        name=name,
        passed=mem.passed,
        value={"t_best": mem.t_best, "error_t0": mem.value_t0, "error_best": mem.value_best,
               f"error_t{mem.t_last}": mem.value_last, "error_mean_image": mem.value_baseline,
               **z},
        threshold=f"error at t* below the t = 0 error, the mean-image error and the t = "
        f"{mem.t_last} error, each paired gain > {mem.z:g} standard errors",
        detail=(
            f"{what}: error (mean ± s.e., {mem.n_eval} inputs held out from the choice of t*) "
            f"{mem.value_t0[0]:.4f} ± {mem.value_t0[1]:.4f} at t = 0, {mem.value_best[0]:.4f} ± "
            f"{mem.value_best[1]:.4f} at t* = {mem.t_best}, {mem.value_last[0]:.4f} ± "
            f"{mem.value_last[1]:.4f} at t = {mem.t_last}, {mem.value_baseline[0]:.4f} predicting "
            f"the mean training image; gains {z['z_vs_t0']:.1f}, {z['z_vs_baseline']:.1f}, "
            f"{z['z_vs_last']:.1f} s.e."
        ),
    )


def _shrinkage_check(name: str, mem, keep: float, what: str) -> Check:
    z = mem.margins()["z_vs_baseline"]
    return Check(
        name=name,
        passed=bool(z > mem.z),
        value={"t_best": mem.t_best, "error_best": mem.value_best,
               "error_shrinkage": mem.value_baseline, "z": z, "k": keep},
        threshold=f"error at t* below the error of the shrunk input by > {mem.z:g} standard "
        "errors (paired)",
        detail=(
            f"{what}: error {mem.value_best[0]:.4f} ± {mem.value_best[1]:.4f} at t* = "
            f"{mem.t_best} against {mem.value_baseline[0]:.4f} ± {mem.value_baseline[1]:.4f} for "
            f"the corrupted input shrunk toward the mean training image, vbar + {keep:.2f} "
            f"(v0 - vbar) (factor fitted on corrupted training images); gain {z:+.1f} s.e. "
            "Does the transient carry more than a blur toward the average digit?"
        ),
    )


def _recall_check(name: str, mem, what: str) -> Check:
    z = mem.margins()
    return Check(
        name=name,
        passed=mem.passed,
        value={"t_best": mem.t_best, "corr_t0": mem.value_t0, "corr_best": mem.value_best,
               f"corr_t{mem.t_last}": mem.value_last, **z},
        threshold=f"centred correlation with the nearest training image at t* above its t = 0 "
        f"and its t = {mem.t_last} value, each paired gain > {mem.z:g} standard errors",
        detail=(
            f"{what}: correlation with the nearest training image {mem.value_t0[0]:.3f} at t = 0, "
            f"{mem.value_best[0]:.3f} at t* = {mem.t_best} (chosen on the other half), "
            f"{mem.value_last[0]:.3f} at t = {mem.t_last}; gains {z['z_vs_t0']:.1f} (rise) and "
            f"{z['z_vs_last']:.1f} (fall) s.e."
        ),
    )


def _lifetime_check(name: str, life, what: str) -> Check:
    sm = life.summary()["half_depth"]
    return Check(
        name=name,
        passed=bool(sm["mean"] - _MIN_LIFETIME > _Z * sm["sem"]),
        value=sm,
        threshold=f"mean lifetime > {_MIN_LIFETIME:g} steps by more than {_Z:g} standard errors",
        detail=(
            f"{what}: lifetime of the transient (steps keeping half of the best gain over the "
            f"input, the mean image and the end state) {sm['mean']:.2f} ± {sm['sem']:.2f} "
            f"(s.d. {sm['std']:.2f}, quartiles {sm['q25']:g}/{sm['median']:g}/{sm['q75']:g})"
        ),
    )


def digits_checks(dig) -> list[Check]:
    """The checks of a :class:`~replica_mlm.attractor.experiments.DigitsExperiment`: the
    two-sided transient test on test and training digits for both tasks, and on test digits the
    comparison with the shrunk input, the recall test and the lifetime."""
    checks = []
    whats = (("masked", "4 of 16 patches masked"), ("noise", "25% pixels noisy"))
    for split in ("test", "train"):
        for task, what in whats:
            checks.append(_memory_check(
                f"attractor.digits.transient_memory.{task}.{split}",
                dig.memory[task][split], f"digits, {split} images, {what}",
            ))
    for task, what in whats:
        checks.append(_shrinkage_check(
            f"attractor.digits.beyond_shrinkage.{task}.test",
            dig.curves[task]["test"].extra["shrinkage_test"], dig.shrink[task],
            f"digits, test images, {what}",
        ))
        checks.append(_recall_check(
            f"attractor.digits.recall.{task}.test", dig.recall[task]["test"],
            f"digits, test images, {what}",
        ))
        checks.append(_lifetime_check(
            f"attractor.digits.lifetime.{task}.test", dig.lifetimes[task]["test"],
            f"digits, test images, {what}",
        ))
        extra = dig.curves[task]["test"].extra
        if "control_test" in extra:
            checks.append(_control_check(
                f"attractor.digits.beyond_structureless.{task}.test", extra["control_test"],
                extra["control_step"], f"digits, test images, {what}",
            ))
    return checks


def _control_check(name: str, mem, t_control: int, what: str) -> Check:
    z = mem.margins()["z_vs_baseline"]
    # the share of the transient's gain over the corrupted input that the control reaches too
    gain = mem.value_t0[0] - mem.value_best[0]
    share = (mem.value_t0[0] - mem.value_baseline[0]) / gain if gain > 0 else None
    return Check(
        name=name,
        passed=bool(z > mem.z),
        value={"t_best": mem.t_best, "error_best": mem.value_best,
               "error_control": mem.value_baseline, "t_control": t_control, "z": z,
               "share_of_gain_without_correlations": share},
        threshold=f"error at t* below the structureless control's error at its best step by > "
        f"{mem.z:g} standard errors (paired, same corrupted inputs)",
        detail=(
            f"{what}: error {mem.value_best[0]:.4f} ± {mem.value_best[1]:.4f} at t* = "
            f"{mem.t_best} against {mem.value_baseline[0]:.4f} ± {mem.value_baseline[1]:.4f} for "
            f"the same network trained on the training images with every pixel shuffled "
            f"independently across images (pixel marginals kept, correlations lost) at its best "
            f"step {t_control}; gain {z:+.1f} s.e.; "
            + (f"the control reaches {100 * share:.0f} % of the trained network's gain over the "
               f"corrupted input ({mem.value_t0[0]:.4f} at t = 0)" if share is not None else
               "no gain over the corrupted input to compare")
        ),
    )


def potts_checks(ms: dict) -> list[Check]:
    """The two exact predictions on Gaussian Potts sequences, from the dictionary of
    :func:`~replica_mlm.attractor.potts_sequences.masked_site_comparison`: one step of factored
    attention with ``A = -P_i./P_ii`` has mean squared error ``1/P_ii`` and predicting the mean
    has ``C_ii`` (paired over sequences, within 3 standard errors)."""
    checks = []
    for key, exact, name, what in (
        ("oracle_minus_exact_1_over_Pii", "theory_oracle_mean_1_over_Pii",
         "attractor.potts.factored_attention_matches_theory",
         "one step of linear factored attention with A = -P_i./P_ii"),
        ("zero_minus_exact_Cii", "theory_zero_mean_Cii",
         "attractor.potts.predict_mean_matches_theory", "predicting the mean x_i = 0"),
    ):
        d, se = ms[key]
        value = {"paired_difference": ms[key], "exact_mean": ms[exact], "z": d / se}
        power = ""
        if key.startswith("oracle"):
            shift = ms["oracle_shift_if_sites_independent"]
            value["z_if_sites_independent"] = shift / se
            power = (f"; sites shuffled independently across sequences (no structure) would "
                     f"shift it by {shift:+.4f} (exact), {shift / se:.1f} s.e.")
        checks.append(Check(
            name=name,
            passed=bool(abs(d) < _Z * se),
            value=value,
            threshold=f"|measured - exact| < {_Z:g} standard errors (paired over sequences)",
            detail=(
                f"{what}, held-out Gaussian Potts sequences, one masked site: squared error "
                f"minus its exact expectation {d:+.4f} ± {se:.4f} ({d / se:+.1f} s.e.){power}"
            ),
        ))
    return checks


def _scan_row(label: str, dig, seconds: float) -> dict:
    row = {"config": label, "settings": asdict(dig.settings), "n_train": dig.sizes["n_train"],
           "seconds": seconds}
    for task in ("masked", "noise"):
        mem, rec = dig.memory[task]["test"], dig.recall[task]["test"]
        life = dig.lifetimes[task]["test"].summary()
        row[task] = {
            "t_best": mem.t_best, "error_t0": mem.value_t0[0], "error_best": mem.value_best[0],
            "error_last": mem.value_last[0], "error_mean_image": mem.value_baseline[0],
            "memory_passed": mem.passed, **mem.margins(),
            "error_shrinkage": dig.curves[task]["test"].extra["shrinkage_test"].value_baseline[0],
            "z_vs_shrinkage": dig.curves[task]["test"].extra["shrinkage_test"].margins()[
                "z_vs_baseline"],
            "recall_passed": rec.passed, "recall_z_rise": rec.margins()["z_vs_t0"],
            "recall_z_fall": rec.margins()["z_vs_last"],
            "lifetime": life["half_depth"], "lifetime_below_start_and_mean": (
                life["below_start_and_baseline"]),
            "t_min": life["t_min"],
        }
    return row


def _scan_config(label: str, changes: dict, sizes: dict, base: AttractorSettings, rng: int) -> dict:
    """One row of :func:`lifetime_scan` (module level: runs in a worker process)."""
    changes = dict(changes)
    sz = dict(sizes)
    if "n_train" in changes:
        sz["n_train"] = changes.pop("n_train")
    t0 = time.perf_counter()
    dig = digits_experiment(settings=replace(base, **changes), rng=rng, **sz)
    return _scan_row(label, dig, time.perf_counter() - t0)


def _scan_tasks(sizes: dict, scan, base: AttractorSettings, rng: int) -> list[Task]:
    return [Task(_scan_config, (label, dict(changes), dict(sizes), base, rng)) for label, changes in scan]


def lifetime_scan(*, sizes: dict, scan=_SCAN, base: AttractorSettings = DEFAULT_SETTINGS,
                  rng: int = 0, echo=None, workers: int = 1) -> list[dict]:
    """Run :func:`digits_experiment` for each ``(label, changes)`` of ``scan`` (changes of the
    settings, or ``n_train``) and return one row of numbers per configuration (test inputs).

    Every configuration uses the same seed ``rng``, so the rows do not depend on ``workers``
    (processes running the configurations; ``echo`` then gets the rows when all have finished).
    """
    tasks = _scan_tasks(sizes, scan, base, rng)
    if workers > 1:
        rows = run_tasks(tasks, workers=workers)
        if echo is not None:
            for row in rows:
                echo(_table([row], header=False))
        return rows
    rows = []
    for task in tasks:
        rows.append(task.func(*task.args))
        if echo is not None:
            echo(_table([rows[-1]], header=False))
    return rows


def _timed(func, **kwargs):
    """``(func(**kwargs), wall seconds)`` (module level: runs in a worker process)."""
    t0 = time.perf_counter()
    return func(**kwargs), time.perf_counter() - t0


def _table(rows: list[dict], header: bool = True) -> str:
    lines = []
    if header:
        lines.append("| configuration | task | t* | error t=0 / t* / t=100 / mean image / shrunk "
                     "input | z (t=0, mean, t=100, shrunk) | lifetime mean ± s.d. [q25, median, "
                     "q75] | step of min | recall z (rise, fall) |")
        lines.append("|" + "---|" * 8)
    for r in rows:
        for task in ("masked", "noise"):
            x = r[task]
            lf, tm = x["lifetime"], x["t_min"]
            lines.append(
                f"| {r['config']} | {task} | {x['t_best']} | {x['error_t0']:.4f} / "
                f"{x['error_best']:.4f} / {x['error_last']:.4f} / {x['error_mean_image']:.4f} / "
                f"{x['error_shrinkage']:.4f} | {x['z_vs_t0']:.1f}, {x['z_vs_baseline']:.1f}, "
                f"{x['z_vs_last']:.1f}, {x['z_vs_shrinkage']:.1f} | "
                f"{lf['mean']:.1f} ± {lf['std']:.1f} [{lf['q25']:g}, {lf['median']:g}, "
                f"{lf['q75']:g}] | {tm['mean']:.1f} | {x['recall_z_rise']:.1f}, "
                f"{x['recall_z_fall']:.1f} |"
            )
    return "\n".join(lines)


def run(out: Path, *, quick: bool = True, rng: int = 0, workers: int = 1) -> Section:
    """Run the attractor-network experiments, write figures and ``attractor.json`` into ``out``.

    Parameters
    ----------
    out : pathlib.Path
        Output folder (created if missing).
    quick : bool
        Smaller data sets (CI); ``False`` uses the whole digits set and adds the lifetime scan
        (``attractor_lifetimes.md``, ``attractor_lifetime_scan.png/pdf``).
    rng : int
        Seed of everything (data split, corruption, the Potts model, training order).
    workers : int
        Processes running the independent parts (the digits experiment, the Potts experiment and,
        in full mode, each configuration of the lifetime scan); every part has its own seed, so
        the results do not depend on ``workers``.

    Returns
    -------
    Section
        Checks: the two-sided transient-memory test on test and training digits for both tasks,
        the recall test (centred correlation with the nearest training image) and the lifetime on
        test digits, and on Gaussian Potts sequences the two exact predictions (one step of
        factored attention has error 1/P_ii, predicting the mean has error C_ii). How the
        attractor network compares with both is measured and reported in ``data["potts"]``, and
        not a check: nothing predicts it (the attractor paper makes no claim about these data).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    settings = DEFAULT_SETTINGS
    dsz, psz = _sizes(quick)
    seeds = np.random.SeedSequence(rng).spawn(4)  # the first three as before; the 4th: control
    tasks = [Task(_timed, kwargs={"func": digits_experiment, "settings": settings,
                                  "rng": np.random.default_rng(seeds[0]),
                                  "control_rng": np.random.default_rng(seeds[3]), **dsz}),
             Task(potts_experiment, kwargs={"settings": settings, "rng": np.random.default_rng(seeds[1]),
                                            **psz})]
    scan_sizes = dict(_SCAN_SIZES)
    if not quick:  # the scan's configurations after the two long experiments (the pool starts in order)
        tasks += _scan_tasks(scan_sizes, _SCAN, settings, int(seeds[2].generate_state(1)[0]))
    t0 = time.perf_counter()
    (dig, t_digits), pot, *rows = run_tasks(tasks, workers=workers)
    t_all = time.perf_counter() - t0

    section = Section(name="attractor network (see docs/theory.md)")
    section.parameters = {"quick": quick, "rng": rng, "settings": asdict(settings),
                          "digits": dig.sizes, "potts": pot.sizes, "z": _Z,
                          "min_lifetime": _MIN_LIFETIME}
    section.checks += digits_checks(dig)
    ms = pot.masked_site_mse
    section.checks += potts_checks(ms)
    avz = ms["attractor_vs_zero"]
    section.data["potts_comparison_note"] = (
        f"measured, not a check: at its best step t* = {avz['t_best']} (chosen on half of the "
        f"sequences) the attractor network's masked-site error is {avz['value_best'][0]:.4f} "
        f"against {avz['value_baseline'][0]:.4f} for predicting the mean (gain "
        f"{avz['z_vs_baseline']:+.1f} s.e., paired) and exceeds one step of factored attention by "
        f"{ms['attractor_heldout_minus_oracle'][0]:.4f} ± {ms['attractor_heldout_minus_oracle'][1]:.4f}"
    )

    section.figures += _plot_errors(dig, out / "attractor_digits_errors")
    section.figures += _plot_lifetimes(dig, out / "attractor_digits_lifetimes")
    section.figures += _plot_examples(dig.examples, [0, 1, 2, 5, 10, 20, 100],
                                      out / "attractor_digits_examples")
    section.figures += _plot_potts(ms, out / "attractor_potts_masked_site")

    section.data.update({
        "digits": {
            "curves": {t: {s: c.summary() for s, c in v.items()} for t, v in dig.curves.items()},
            "memory": {t: {s: m.as_dict() for s, m in v.items()} for t, v in dig.memory.items()},
            "recall": {t: {s: m.as_dict() for s, m in v.items()} for t, v in dig.recall.items()},
            "lifetimes": {t: {s: x.summary() for s, x in v.items()}
                          for t, v in dig.lifetimes.items()},
            "training_cost": dig.cost,
            "seconds_per_epoch": dig.seconds_per_epoch,
            "seconds": t_digits,
            "baseline_mean_training_image_mse": dig.baseline,
            "shrinkage": {t: {"k": dig.shrink[t], "test": v["test"].extra["shrinkage_test"].as_dict()}
                          for t, v in dig.curves.items()},
        },
        "potts": {
            "curves": {t: {s: c.summary() for s, c in v.items()} for t, v in pot.curves.items()},
            "memory": {t: {s: m.as_dict() for s, m in v.items()} for t, v in pot.memory.items()},
            "masked_site_mse": ms,
            "training_cost": pot.cost,
        },
    })
    section.data["experiments_seconds"] = {"wall": t_all, "workers": workers}
    if not quick:
        section.data["lifetime_scan"] = {"sizes": scan_sizes, "rows": rows,
                                         "seconds": sum(r["seconds"] for r in rows)}
        atomic_write_text(out / "attractor_lifetimes.md", _table(rows) + "\n")
        section.figures += _plot_scan(rows, out / "attractor_lifetime_scan",
                                      min_lifetime=_MIN_LIFETIME)
    write_json(out / "attractor.json", {
        "name": section.name, "passed": section.passed,
        "checks": [asdict(c) for c in section.checks], "figures": section.figures,
        "parameters": section.parameters, "data": section.data,
    }, indent=1)
    return section
