"""Pieces shared by the subcommands: task options, finite numbers, locked output folder, metadata."""

from __future__ import annotations

import contextlib
import functools
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import click
import numpy as np

from replica_mlm._base import io
from replica_mlm._base.io import write_json
from replica_mlm._base.limits import MAX_GRID_POINTS
from replica_mlm._base.run_folder import folder_lock
from replica_mlm._version import __version__
from replica_mlm.theory.sides import channels, losses

#: key of ``click.Context.meta`` mapping sweep fingerprint fields to the options that set them
RESUME_LABELS = "replica_mlm.resume_labels"


class FiniteFloat(click.FloatRange):
    """A float option that must be finite (``nan``, ``inf`` and ``-inf`` are usage errors), with
    optional bounds as in :class:`click.FloatRange`."""

    name = "finite float"

    def _describe_range(self) -> str:
        # click shows "x<=None" for a range without bounds: say nothing then
        return "" if self.min is None and self.max is None else super()._describe_range()

    def convert(self, value, param, ctx):
        if isinstance(value, str) and param is not None and param.multiple and "," in value:
            flag = param.opts[0] if param.opts else param.name
            parts = " ".join(f"{flag} {v.strip()}" for v in value.split(",") if v.strip())
            self.fail(f"{value!r} is not one number: repeat {flag} for several values ({parts}).", param, ctx)
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return rv


#: any finite float
FINITE = FiniteFloat()
#: the number of points of a grid option (--points, --lam-points, ...): at least 2, at most the
#: limit of every grid argument (:data:`replica_mlm._base.limits.MAX_GRID_POINTS`), refused before
#: the grid is allocated
GRID_POINTS = click.IntRange(min=2, max=MAX_GRID_POINTS)


class OutFolder(click.Path):
    """``--out``: a folder path (a file there is an error), never empty (``Path("")`` is the current
    folder: an empty value, e.g. an unset shell variable, would write there without being asked)."""

    def __init__(self):
        super().__init__(file_okay=False, path_type=Path)

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value == "":
            self.fail("must name a folder, got an empty string (use '.' for the current folder)", param, ctx)
        return super().convert(value, param, ctx)


def task_options(f):
    """Options that pick the learning task: a finite Gaussian Potts instance and a masked site."""
    f = click.option("--site", "site", type=click.IntRange(min=0), default=0, show_default=True,
                     help="Masked site i (0 <= i < L).")(f)
    f = click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
                     help="Seed of the GOE couplings J.")(f)
    f = click.option("--L", "L", type=click.IntRange(min=2), default=500, show_default=True,
                     help="Number of sites; p = L - 1 inputs.")(f)
    f = click.option("--shift", type=FiniteFloat(min=0, min_open=True), default=3.0,
                     show_default=True, help="Shift s of the precision s I - J (s > 2 for large L).")(f)
    return f


def limit_option(f):
    """``--limit``: the thermodynamic limit L -> infinity at --shift instead of an instance."""
    return click.option("--limit", is_flag=True, default=False,
                        help="Use the thermodynamic limit L -> infinity at --shift (> 2) instead of a "
                             "finite instance (--L, --seed and --site are then ignored).")(f)


def make_task(*, L: int, shift: float, seed: int, site: int, limit: bool = False):
    """The masked site of a random Gaussian Potts model (or its L -> infinity limit), with errors
    turned into usage errors."""
    from replica_mlm import GaussianPotts

    try:
        if limit:
            return GaussianPotts.limit(shift=shift)
        return GaussianPotts.random(L=L, shift=shift, seed=seed).masked_site(site)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


def task_title(task, *, L: int, shift: float, site: int, limit: bool) -> str:
    """A figure title naming the task."""
    if limit:
        return rf"Gaussian Potts, $L \to \infty$, $s = {shift:g}$"
    return rf"Gaussian Potts, $L = {L}$, $s = {shift:g}$, site {site}"


def alpha_grid(alpha_min: float, alpha_max: float, points: int) -> np.ndarray:
    if not 0 < alpha_min < alpha_max:
        raise click.UsageError(f"need 0 < --alpha-min < --alpha-max, got {alpha_min}, {alpha_max}")
    return np.linspace(alpha_min, alpha_max, points)


def write_metadata(out: Path, name: str, parameters: dict[str, Any], *, started: float,
                   files: list[str | Path], rows: dict[str, int] | None = None,
                   extra: dict[str, Any] | None = None) -> Path:
    """Write ``<name>.json``: parameters, version, seeds, timing, the files written and the data
    rows of each CSV table among them (``rows``: file name -> rows below the header), by which
    :func:`replica_mlm.load` tells a complete table from a truncated one.

    The commands write their files inside :func:`output_set` with this file as the manifest: it
    is written last, and a folder without it holds no complete set.
    """
    meta = {
        "command": " ".join(["replica-mlm", *sys.argv[1:]]),
        "version": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "parameters": parameters,
        "elapsed_seconds": time.time() - started,
        "files": [_relative(f, out) for f in files],
        "rows": dict(rows or {}),
        **(extra or {}),
    }
    path = out / f"{name}.json"
    write_json(path, meta, indent=2)
    return path


def _relative(path: str | Path, out: Path) -> str:
    """``path`` relative to ``out`` where it lies inside it (a file of a subfolder keeps the
    subfolder), else its name."""
    try:
        return str(Path(path).resolve().relative_to(Path(out).resolve()))
    except ValueError:
        return Path(path).name


def output_set(out: Path, name: str):
    """The files of command ``name`` in ``out`` as one set, ``<name>.json`` (the metadata) last:
    :func:`replica_mlm._base.io.output_set`. A failure (a full disk) leaves the folder's previous set."""
    claim_out()
    return io.output_set(out, manifest=f"{name}.json")


# --- options shared by the sweep subcommands (simulate, validate, ...) ---------------------

CONVENTIONS = (
    "Conventions: alpha = n / p with p = L - 1 unmasked sites; ridge penalty (lam p / 2) |w|^2, "
    "lam = 0 is the Moore-Penrose solution; eg = E (y - w.x)^2 on a fresh sample, without a "
    "factor 1/2."
)


def lam_option(default: tuple[float, ...]):
    """``--lam`` (repeatable): ridge strengths >= 0."""
    return click.option("--lam", "lams", type=FiniteFloat(min=0), multiple=True, default=default,
                        show_default=True,
                        help="Ridge strength(s) >= 0; repeat for several. Penalty (lam p / 2) |w|^2.")


def alpha_range_options(f, *, alpha_min: float = 0.05, alpha_max: float = 4.0, points: int = 200):
    """``--alpha-min``, ``--alpha-max``, ``--points``: an evenly spaced alpha grid."""
    f = click.option("--points", type=GRID_POINTS, default=points, show_default=True,
                     help="Number of alpha values (evenly spaced).")(f)
    f = click.option("--alpha-max", type=FINITE, default=alpha_max, show_default=True,
                     help="Largest alpha.")(f)
    f = click.option("--alpha-min", type=FINITE, default=alpha_min, show_default=True,
                     help="Smallest alpha = n/p.")(f)
    return f


#: where every command writes unless given --out: one folder per command under one git-ignored root
OUT_ROOT = Path("replica-mlm-out")


def default_out(command: str) -> Path:
    """The default output folder of ``command``: ``replica-mlm-out/<command>``."""
    return OUT_ROOT / command


def out_option(command: str, help: str = "Output folder (created if missing)."):
    """``--out DIR`` (default :func:`default_out` of ``command``) and ``--overwrite``.

    The command body runs inside :func:`replica_mlm._base.run_folder.folder_lock`: a second run into the same
    folder at the same time stops at once with a one-line error (exit status 2). A folder that
    already holds files is refused (exit status 2) unless ``--overwrite`` is given, or ``--resume``
    for the commands that have it: a second run never replaces a first one's files unasked. The
    refusal comes from :func:`claim_out`, which the command calls before it writes anything (after
    checking its options, so a bad option is reported as such).

    Every file the run writes into the folder is listed in its run manifest
    (:func:`run_manifest`); ``--overwrite`` then removes the files the earlier run of the same
    command listed and this one did not write, and nothing else. A run that stops before writing
    (a usage error, a bad input file) leaves no folder it created behind.
    """
    def decorate(f):
        @functools.wraps(f)
        def locked(*args, overwrite: bool, **kwargs):
            out = Path(kwargs["out"])
            made, written, refused = _first_missing(out), set(), False
            try:
                with folder_lock(out):
                    claim = click.get_current_context().meta[OUT_CLAIM] = {
                        "out": out, "overwrite": overwrite or bool(kwargs.get("resume")),
                        "resumable": "resume" in kwargs, "claimed": False}
                    completed = False
                    with io.recording(out) as written:
                        try:
                            result = f(*args, **kwargs)
                            completed = True
                        except SystemExit as exc:  # a run whose checks failed: complete all the same
                            completed = exc.code in (0, 1, None)
                            raise
                        except (ValueError, TypeError, click.UsageError):  # its input refused
                            refused = True
                            raise
                        finally:
                            if claim["claimed"]:
                                record_run(out, command, set(written), replace=overwrite and completed)
                    return result
            finally:
                if made is not None:  # a folder of this run's own: an input refused leaves none
                    _remove_empty_folders(made, out, files=written if refused else ())

        with_flag = click.option("--overwrite", is_flag=True, default=False,
                                 help="Write into --out even if it holds files: the files of the "
                                      "earlier run of this command are replaced or removed, others "
                                      "stay.")(locked)
        return click.option(
            "--out", type=OutFolder(), default=default_out(command),
            show_default=True, help=f"{help} Locked while the command runs: one run per folder at a time.",
        )(with_flag)

    return decorate


def _first_missing(out: Path) -> Path | None:
    """The outermost folder of ``out`` that does not exist yet (None if ``out`` exists)."""
    missing = [f for f in [out, *out.parents] if not (f.exists() or f.is_symlink())]
    return missing[-1] if missing and missing[0] == out else None


def _remove_empty_folders(top: Path, out: Path, *, files=()) -> None:
    """Remove ``files`` (relative to ``out``, with the run manifest), then the folders of ``out``
    left empty and ``out`` and its parents up to ``top`` (folders this run created) where empty."""
    for rel in files:
        (out / rel).unlink(missing_ok=True)
    if files:
        for manifest in out.glob(".replica-mlm-*.files.json"):
            manifest.unlink(missing_ok=True)
        for root, _, _ in sorted(os.walk(out), key=lambda w: -len(Path(w[0]).parts)):
            with contextlib.suppress(OSError):
                Path(root).rmdir()
    for folder in [out, *out.parents]:
        try:
            folder.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            return
        if folder == top:
            return


def run_manifest(out: Path, command: str) -> Path:
    """The run manifest of ``command`` in ``out``: a hidden JSON file listing the files (relative
    to ``out``) the last run of the command wrote there, by which ``--overwrite`` removes them."""
    return Path(out) / f".replica-mlm-{command}.files.json"


def _listed(out: Path, command: str) -> set[Path]:
    """The files the manifest of ``command`` lists, each inside ``out`` (others are ignored)."""
    from replica_mlm._base.run_folder import LOCK_NAME

    try:
        data = io.loads(io.read_text_file(run_manifest(out, command), max_bytes=2**24))
    except (OSError, ValueError):
        return set()
    files = data.get("files") if isinstance(data, dict) else None
    listed = set()
    for name in files if isinstance(files, list) else []:
        rel = Path(name) if isinstance(name, str) and name else None
        if rel is None or rel.is_absolute() or ".." in rel.parts or rel.name == LOCK_NAME:
            continue
        listed.add(rel)
    return listed


def record_run(out: Path, command: str, written: set[Path], *, replace: bool) -> None:
    """Write the run manifest of ``command`` (:func:`run_manifest`): the files ``written`` by this
    run, and, unless ``replace``, those of earlier runs still there (a resumed or failed run adds
    to them). With ``replace`` (``--overwrite``, the run completed) the earlier run's files this
    run did not write are removed first, with the folders they leave empty."""
    manifest = run_manifest(out, command)
    rel_manifest = Path(manifest.name)
    old = _listed(out, command) - {rel_manifest}
    written = written - {rel_manifest}
    keep: set[Path] = set()
    for rel in sorted(old - written):
        path = out / rel
        if not replace:
            if path.is_file():
                keep.add(rel)
            continue
        if path.is_file() or path.is_symlink():
            path.unlink(missing_ok=True)
            for folder in path.parents:
                if folder == out or out not in folder.parents:
                    break
                try:
                    folder.rmdir()
                except OSError:
                    break
    if written | keep:
        write_json(manifest, {"command": command, "files": sorted(map(str, written | keep))}, indent=1)
    else:  # nothing of the command's left (a run refused before its first file)
        manifest.unlink(missing_ok=True)


#: key of ``click.Context.meta``: the --out folder of the running command and whether it may be written
OUT_CLAIM = "replica_mlm.out_claim"


def claim_out(*, subfolders: tuple[str, ...] = ()) -> None:
    """Before a command's first write: remove the temporary files a killed run of the package left
    in --out (:func:`replica_mlm._base.io.remove_temporaries`), then refuse an --out that holds
    files unless --overwrite (or --resume) was given (:func:`refuse_non_empty`), and a file where
    one of ``subfolders`` goes (the one-line OSError of a file where a folder is needed). Once per
    run; nothing outside a command."""
    import errno

    ctx = click.get_current_context(silent=True)
    claim = ctx.meta.get(OUT_CLAIM) if ctx is not None else None
    if claim is None or claim["claimed"]:
        return
    for name in subfolders:
        sub = Path(claim["out"]) / name
        if sub.exists() and not sub.is_dir():
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(sub))
    io.remove_temporaries(claim["out"])  # a killed writer's leftovers: the folder's lock is ours
    refuse_non_empty(claim["out"], overwrite=claim["overwrite"], resumable=claim["resumable"])
    claim["claimed"] = True


def refuse_non_empty(out: Path, *, overwrite: bool, resumable: bool = False) -> None:
    """A usage error (exit status 2) if ``out`` holds files and ``overwrite`` is False."""
    from replica_mlm._base.run_folder import LOCK_NAME

    if overwrite:
        return
    held = sorted(p.name for p in Path(out).iterdir() if p.name != LOCK_NAME)
    if held:
        shown = ", ".join(held[:3]) + (", ..." if len(held) > 3 else "")
        also = " (or --resume to continue a half-finished run)" if resumable else ""
        raise click.UsageError(f"--out {out} already holds files ({shown}): add --overwrite to replace "
                               f"them{also}, or choose another --out")


def resume_labels(**labels: str) -> None:
    """Tell the error handler of :mod:`replica_mlm.cli` which option sets each fingerprint field
    (e.g. ``seed="--sample-seed"``), so a refused ``--resume`` names the option."""
    click.get_current_context().meta[RESUME_LABELS] = labels


def scale_options(f):
    """``--workers``, ``--threads``, ``--scheduler``, ``--resume``, ``--progress/--no-progress``."""
    f = click.option("--progress/--no-progress", "progress", default=None,
                     help="Progress bar on stderr [default: when stderr is a terminal].")(f)
    f = click.option("--resume", is_flag=True, default=False,
                     help="Continue a half-finished run in --out: finished points (written atomically, "
                          "one file each) are loaded, not recomputed. Refused (exit status 2) if the "
                          "folder holds a run with other parameters, seeds or package version.")(f)
    f = click.option("--scheduler", metavar="ADDRESS", default=None,
                     help="Send the points to a Dask distributed scheduler (e.g. tcp://host:8786); "
                          "needs pip install \"replica-mlm[dask]\". Overrides --workers. An "
                          "unreachable scheduler is an error after 10 s.")(f)
    f = click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True,
                     help="BLAS threads per worker process, set with threadpoolctl for the run only. "
                          "1 is fastest for these many small SVDs: more threads fight over the cores, "
                          "and --workers would multiply them.")(f)
    f = click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Local worker processes for the sweep (results do not depend on it).")(f)
    return f


def check_scheduler(scheduler: str | None) -> None:
    """A usage error (exit 2) if a scheduler is asked for but dask.distributed is missing."""
    import importlib.util

    if scheduler is not None and importlib.util.find_spec("distributed") is None:
        raise click.UsageError(
            "--scheduler needs dask.distributed: pip install \"replica-mlm[dask]\"")


def section_command(name: str, *, doc: str, quick_help: str, seed_help: str) -> click.Command:
    """A subcommand that runs the validation section ``replica_mlm.validation.<name>_section`` into --out.

    It prints each check, writes the section's figures and ``<name>.json``, and exits with status 1
    if a check fails (a known deviation that fails as documented does not count). Its --help has
    no ridge-conventions epilog: these sections train no ridge.
    """
    import importlib

    @click.command(name, help=doc)
    @click.option("--quick/--full", default=True, show_default=True, help=quick_help)
    @click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help=seed_help)
    @out_option(name, help=f"Folder for the figures (PNG, PDF) and {name}.json.")
    def command(quick: bool, seed: int, out: Path) -> None:
        module = importlib.import_module(f"replica_mlm.validation.{name}_section")
        claim_out()
        section = module.run(out, quick=quick, rng=seed)
        echo_section(section, f"figures and {name}.json written to {out}")

    return command


def echo_section(section, written: str) -> None:
    """Print a validation section's checks, its summary and what was written; exit status 1
    unless every check's verdict is as expected (known deviations may fail)."""
    from replica_mlm.validation.report import summary

    for c in section.checks:
        click.echo(f"[{c.label}] {c.name}: {c.detail}")
    click.echo(summary(section.checks))
    click.echo(written)
    if not section.passed:
        raise SystemExit(1)


# --- loss and label channel (general ERM; see docs/theory.md, sections 6-7) ----------------

class RegistryName(click.ParamType):
    """A name of the losses' or the channels' registry (``rm.losses``, ``rm.channels``), checked by
    the registry's own ``resolve``: an unknown name is a usage error (exit 2) with the same
    message as :func:`replica_mlm.solve` gives. The value is the name, stripped and lower-cased."""

    def __init__(self, registry) -> None:
        self.registry = registry
        self.name = registry.__name__.rpartition(".")[2].rstrip("s")

    def get_metavar(self, param, ctx=None) -> str:
        return "[" + "|".join(self.registry.names()) + "]"

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem
        return [CompletionItem(n) for n in self.registry.names() if n.startswith(incomplete)]

    def convert(self, value, param, ctx):
        try:
            self.registry.resolve(value)
        except (TypeError, ValueError) as exc:
            self.fail(str(exc), param, ctx)
        return value.strip().lower()


#: ``--loss`` and ``--channel`` values: names of the registries ``rm.losses`` and ``rm.channels``
LOSS = RegistryName(losses)
CHANNEL = RegistryName(channels)


def erm_options(f, *, loss_type: click.ParamType = LOSS):
    """``--loss`` (names of ``loss_type``) and ``--channel``: the convex loss and the label channel
    (default: ridge MLM)."""
    f = click.option("--channel", type=CHANNEL, default="gaussian", show_default=True,
                     help="Label channel (rm.channels): gaussian is y = w*.x + noise (the MLM label), "
                          "sign its sign, logit P(y|nu) = 1/(1+exp(-y nu)).")(f)
    f = click.option("--loss", type=loss_type, default="square", show_default=True,
                     help="Training loss (rm.losses; default instance of each, huber has delta = 1). "
                          "Logistic and hinge need a binary channel (sign, logit); pairs but "
                          "square/gaussian need lam > 0.")(f)
    return f


def check_erm(loss: str, channel: str, lams=()) -> None:
    """Usage errors for loss/channel pairs (and lam) the theory refuses: the message of the theory
    layer's one rule, :func:`replica_mlm.theory.sides.channels.check_pair`."""
    loss_obj, channel_obj = losses.resolve(loss), channels.resolve(channel)
    try:
        channels.check_pair(loss_obj, channel_obj)
        for lam in lams:
            channels.check_pair(loss_obj, channel_obj, lam=lam)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
