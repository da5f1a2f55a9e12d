"""``replica-mlm contacts``: contacts of a protein family predicted from its alignment (docs/proteins.md)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from replica_mlm.cli._common import FiniteFloat, claim_out, out_option, output_set, write_metadata
from replica_mlm.proteins.structure import MIN_COVERAGE, MIN_IDENTITY

FAMILIES = ("S1A", "DHFR", "rhomboid")
TOPS = ("L/5", "L/2", "L")


@click.command()
@click.argument("family_or_file")
@click.option("--pdb", "pdb", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Structure (PDB) of the family, for the precision and the contact map. A family "
                   "name brings its own.")
@click.option("--chain", default=None,
              help="Chain of the structure to map onto the alignment; default: the chain that maps "
                   "best (largest identity x coverage), printed.")
@click.option("--force-structure", is_flag=True, default=False,
              help="Use a structure whose mapping is below the thresholds of identity "
                   f"({MIN_IDENTITY:g}) or coverage ({MIN_COVERAGE:g}) instead of refusing it.")
@click.option("--method", type=click.Choice(["mean-field", "plm", "factored"]), default="mean-field",
              show_default=True, help="Mean-field DCA, plmDCA, or factored attention with --heads heads.")
@click.option("--heads", type=click.IntRange(min=1), default=32, show_default=True,
              help="Heads of factored attention (--method factored).")
@click.option("--max-gap-fraction", type=FiniteFloat(0.0, 1.0), default=0.2, show_default=True,
              help="Keep the alignment columns with at most this fraction of gaps.")
@click.option("--max-iter", type=click.IntRange(min=1), default=500, show_default=True,
              help="L-BFGS iterations at most (plm, factored).")
@click.option("--precision", "fit_precision", type=click.Choice(["double", "single"]), default=None,
              help="Precision of the fit's large matrix products (plm, factored): single is about 2.5 "
                   "times faster and is finished in double where float32 stalls. Default: rm.fit_potts's "
                   "(single for plm, double for factored).")
@out_option("contacts")
def contacts(*, family_or_file, pdb, chain, force_structure, method, heads, max_gap_fraction, max_iter,
             fit_precision, out):
    """Predict the contacts of a protein family from its multiple sequence alignment.

    FAMILY_OR_FILE is S1A, DHFR or rhomboid (alignments and structures shipped with the
    [proteins] extra) or an alignment file (FASTA, .gz, A2M/A3M, Stockholm). Couplings by
    mean-field DCA, plmDCA or factored attention (80 % identity reweighting); scores: Frobenius
    norm over the amino acids in the zero-sum gauge with the average product correction. With a
    structure, the precision of the top L/5, L/2 and L pairs (C-beta < 8 A, j - i >= 6).
    The structure's chain (--chain, or the one that maps best) is mapped onto the alignment's
    columns; its identity and coverage are printed, and a mapping below identity 0.6 or
    coverage 0.5 (another family, the wrong chain) is refused unless --force-structure is given.
    Writes contacts.csv (every pair: columns, score, distance), a contact map (PNG, PDF) when a
    structure is known, and contacts.json (metadata, precisions) last.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    import replica_mlm as rm
    from replica_mlm._base.io import write_csv
    from replica_mlm.figures.protein_families import plot_contact_map
    from replica_mlm.proteins.contacts import coupling_scores
    from replica_mlm.proteins.potts_fit import DEFAULTS
    from replica_mlm.proteins.structure import map_structure

    started = time.time()
    name = next((f for f in FAMILIES if f.lower() == family_or_file.lower()), None)
    if name is not None:
        if pdb is not None:
            raise click.UsageError(f"{name} brings its own structure: leave out --pdb")
        msa, structure = rm.datasets.protein_family(name, max_gap_fraction=max_gap_fraction, chain=chain)
    else:
        path = Path(family_or_file)
        if not path.is_file():
            raise click.BadParameter(f"{family_or_file!r} is neither a family ({', '.join(FAMILIES)}) nor a "
                                     "file", param_hint="FAMILY_OR_FILE")
        if pdb is None and (chain is not None or force_structure):
            raise click.UsageError(f"{'--chain' if chain is not None else '--force-structure'} needs a "
                                   "structure: give --pdb FILE")
        msa = rm.MSA.read(path).filter(max_gap_fraction=max_gap_fraction)
        structure = None if pdb is None else map_structure(pdb, msa, chain=chain)
    if structure is not None:
        click.echo(structure.describe())
        problem = structure.mapping_problem()
        if problem is not None and not force_structure:  # one line on stderr, exit status 2 (cli._Main)
            raise ValueError(f"{problem}: give the structure of this family (or --chain), or "
                             "--force-structure to score against it all the same")
    claim_out()  # before the fit: a folder with another run's files is refused now, not after it
    t0 = time.process_time()
    if method == "mean-field":
        couplings = rm.fit_potts(msa, method="mean-field", reweight=0.8, pseudocount=0.5).couplings
        fit_info = {}
    else:
        shown = fit_precision or DEFAULTS[method][1]
        per_site = " per site" if method == "plm" else ""
        click.echo(f"fitting {method} couplings of L = {msa.L} columns, N = {msa.N} sequences by L-BFGS "
                   f"(at most {max_iter} iterations{per_site}, {shown} precision, "
                   f"tol {DEFAULTS[method][0]:g}) ...",
                   err=True)
        fit = rm.fit_potts(msa, method=method, reweight=0.8, max_iter=max_iter, precision=fit_precision,
                           **({"heads": heads} if method == "factored" else {}))
        couplings = fit.couplings
        fit_info = {"converged": fit.converged, "iterations": fit.iterations,
                    "gradient_norm": fit.gradient_norm, "tol": fit.tol, "distance_bound": fit.distance_bound}
        click.echo(f"fit {'converged' if fit.converged else 'did NOT converge'} after {fit.iterations} "
                   f"iterations{' (the most of any site)' if per_site else ''} (max |gradient| "
                   f"{fit.gradient_norm:.3g}, tol {fit.tol:g}"
                   + ("" if fit.distance_bound is None else
                      f"; proven distance to the optimum <= {fit.distance_bound:.3g}") + ")"
                   + ("" if fit.converged else ": the scores are those of the last iterate; raise "
                      "--max-iter"))
    scores = coupling_scores(couplings, apc=True)
    cpu = time.process_time() - t0
    L = msa.L
    dist = structure.distances if structure is not None else np.full((L, L), np.nan)
    i, j = np.triu_indices(L, k=1)
    rows = [{"i": int(a), "j": int(b), "column_i": int(msa.columns[a]), "column_j": int(msa.columns[b]),
             "score": float(scores[a, b]), "distance": float(dist[a, b])} for a, b in zip(i, j, strict=True)]
    precision = ({top: rm.contact_precision(scores, structure, top=top) for top in TOPS}
                 if structure is not None else {})
    files = [out / "contacts.csv"]
    with output_set(out, "contacts"):
        write_csv(out / "contacts.csv", rows, columns=["i", "j", "column_i", "column_j", "score", "distance"])
        if structure is not None:
            label = name or Path(family_or_file).name
            fig = plot_contact_map(scores, dist, top=L, path=out / "contact_map",
                                   title=f"{label} ({method}): precision {precision['L']:.2f} at top L, "
                                         f"{precision['L/5']:.2f} at top L/5"
                                         + ("" if fit_info.get("converged", True) else
                                            f"; fit not converged ({fit_info['iterations']} iterations)"))
            plt.close(fig)
            files += [out / "contact_map.png", out / "contact_map.pdf"]
        parameters = dict(family_or_file=family_or_file, pdb=None if pdb is None else str(pdb), chain=chain,
                          force_structure=force_structure, method=method,
                          heads=heads if method == "factored" else None, max_gap_fraction=max_gap_fraction,
                          max_iter=max_iter, precision=fit_precision if method != "mean-field" else None)
        write_metadata(out, "contacts", parameters,
                       started=started, files=files, rows={"contacts.csv": len(rows)},
                       extra={"L": L, "N": msa.N, "effective_size": float(msa.effective_size),
                              **_mapping(structure),
                              "precision": precision, "cpu_seconds": cpu, **fit_info})
    for top, value in precision.items():
        click.echo(f"top-{top} precision: {value:.3f}")
    click.echo(f"wrote {', '.join(str(f) for f in files)} and {out / 'contacts.json'}")


def _mapping(structure) -> dict:
    """The mapping's numbers for contacts.json (None without a structure)."""
    if structure is None:
        return dict.fromkeys(("mapping_identity", "mapping_coverage", "mapping_columns", "chain",
                              "mapping_reference"))
    return {"mapping_identity": float(structure.identity), "mapping_coverage": structure.coverage,
            "mapping_columns": structure.mapped_columns, "chain": structure.structure.chain,
            "mapping_reference": structure.reference}
