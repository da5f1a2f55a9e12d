"""The discrete section's mixture checks: both theories of a masked site against discrete fits.

A masked site of an Ising or Potts model is, given a Gaussian cavity law, exactly a Gaussian mixture
(docs/discrete.md, "The site as a Gaussian mixture"; docs/multiclass.md, same section); Gaussian
equivalence keeps only its covariance. On two sites where the measured tables of those pages show
Gaussian equivalence off and the mixture within 3 standard errors, this part of the ``discrete``
section simulates ERM on the discrete sequences and reports the z of both theories:

* Ising (q = 2): SK instance ``random_ising(13, beta=0.5, seed=0)``, site 0, lam = 0.1; training
  sets drawn i.i.d. from the exact Boltzmann law (enumeration of the 2^13 configurations), fitted
  by the pseudo-likelihood fitter (:func:`replica_mlm.learners.pseudo_likelihood.fit_site`), every
  test measure exact (the sum over all configurations, averaged analytically over the spin);
* Potts (q = 3): standard Potts model on the couplings of ``random_ising(12, beta=1, seed=3)`` at
  beta = 1.5, site 0, lam = 0.1 (the instance of docs/multiclass.md), simulated by ``rm.simulate``.

Full mode adds points (Potts alpha in {1, 2, 5}) and a held Ising site at larger L, L = 41 and
beta = 0.8 (``rm.simulate``: the package's sampler, 80 seeds; the mixture from 20000 sampled
sequences) at alpha in {1, 4}, where docs/discrete.md shows Gaussian equivalence off and the mixture
within 3 SE; it reports the L = 13, beta = 0.5 site at three more alphas with 1000 seeds, which
resolve the mixture's finite-L residual there (the mixture is a finite-L improvement at weak
coupling, not exact), and L = 13 at beta = 0.8 and 1.2.

Checks: ``discrete.mixture_agreement``: at every held point the mixture's |z| <= 3 in test loss,
error rate and estimation error, z = (simulation - theory) / SE of the simulation over seeds;
``discrete.mixture_matters``: Gaussian equivalence's largest |z| over the same numbers is above 3
(the check has power: the two theories are told apart). Strongly coupled Ising sites at L = 13
(beta = 1.2; full mode also 0.8), where the mixture is measured to miss as well (non-Gaussian cavity
fields, docs/discrete.md), are reported, not held.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_expit

from replica_mlm._base.stats import mean_stderr
from replica_mlm.validation.report import Check

MEASURES = ("test_loss", "eg", "estimation_error")
THEORIES = ("gaussian", "mixture")
Z_MAX = 3.0


def settings(quick: bool) -> dict:
    """Points and seeds of the mixture checks (quick: CI-sized; the Potts lines cost ~1 s a point).

    ``ising``: one entry per Ising site (size ``L``, ``beta``, ``alphas``, ``seeds``, whether it is
    ``held`` to the check and drawn with ``curves``); L <= 16 by exact enumeration, larger by the
    package's sampler (``rm.simulate``).
    """
    held = dict(L=13, beta=0.5, alphas=[1.0], seeds=400, held=True, curves=True)
    if quick:
        return dict(ising=[held, dict(L=13, beta=1.2, alphas=[1.0], seeds=400, held=False, curves=False)],
                    potts_alphas=[5.0], potts_seeds=40, lam=0.1, ising_fig_points=16, potts_fig_points=10)
    return dict(ising=[held, dict(L=41, beta=0.8, alphas=[1.0, 4.0], seeds=80, held=True, curves=True),
                       # the weak-coupling site with more seeds resolves its finite-L residual: reported
                       dict(L=13, beta=0.5, alphas=[0.5, 2.0, 4.0], seeds=1000, held=False, curves=False),
                       *(dict(L=13, beta=b, alphas=[0.5, 1.0, 2.0, 4.0], seeds=400, held=False,
                              curves=False) for b in (0.8, 1.2))],
                potts_alphas=[1.0, 2.0, 5.0], potts_seeds=40, lam=0.1, ising_fig_points=24,
                potts_fig_points=16)


def _exact_measures(w: np.ndarray, x: np.ndarray, p_plus: np.ndarray, prob: np.ndarray
                    ) -> tuple[float, float]:
    """Exact test cross-entropy and error rate of ``w``: sums over all configurations with ``prob``."""
    z = x @ w
    loss = -(p_plus * log_expit(z) + (1.0 - p_plus) * log_expit(-z))
    wrong = np.where(z > 0, 1.0 - p_plus, np.where(z < 0, p_plus, 0.5))
    return float(prob @ loss), float(prob @ wrong)


def _row(name: str, alpha: float, lam: float, seeds: int, sims: dict, th: dict, held: bool) -> dict:
    row = dict(site=name, alpha=alpha, lam=lam, seeds=seeds, held=held)
    for k in MEASURES:
        mean, se = sims[k]
        row[f"{k}_sim"], row[f"{k}_se"] = mean, se
        for t in THEORIES:
            row[f"{k}_{t}"] = float(getattr(th[t], k))
            row[f"{k}_z_{t}"] = (mean - row[f"{k}_{t}"]) / se
    return row


def _curves(task, alphas, lam: float, n: int, **kw) -> dict:
    """Both theories' test loss and error rate on a log grid spanning ``alphas`` (for the figure);
    ``kw`` (the loss) for a binary site, none for a multi-class one."""
    import replica_mlm as rm

    grid = np.geomspace(0.5 * min(alphas), 2.0 * max(alphas), n)
    out = dict(alpha=grid)
    for t in THEORIES:  # one warm-started learning curve per theory (binary or multi-class site)
        lc = rm.learning_curve(task, alpha=grid, lam=lam, theory=t, progress=False, **kw)
        out[f"test_loss_{t}"], out[f"eg_{t}"] = np.asarray(lc.test_loss), np.asarray(lc.eg)
    return out


def ising_site(spec: dict, s: dict, rng: int) -> dict:
    """Both theories against pseudo-likelihood fits at site 0 of ``random_ising(L, beta, seed=0)``.

    L <= 16: training sets drawn i.i.d. from the exact Boltzmann law, exact test measures; larger L:
    ``rm.simulate`` (the package's sampler thinned by its measured autocorrelation time, test
    measures Rao-Blackwellised on fresh sequences) and the mixture from 20000 sampled sequences.
    """
    import replica_mlm as rm

    L, beta, seeds, lam = spec["L"], spec["beta"], spec["seeds"], s["lam"]
    model = rm.PottsModel.random_ising(L=L, beta=beta, seed=0)
    task = model.masked_site(0, rng=rng, samples=20000)
    chk = task.mixture.cavity_check()
    name, rows = f"Ising L = {L}, beta = {beta:g}", []
    exact = _ExactIsing(model, task.teacher, rng) if L <= 16 else None
    for alpha in spec["alphas"]:
        th = {t: rm.solve(task, alpha=alpha, lam=lam, loss="logistic", theory=t) for t in THEORIES}
        if exact is not None:
            sims = exact.simulate(round(alpha * (L - 1)), lam, seeds)
        else:
            sim = rm.simulate(model, site=0, alpha=alpha, lam=lam, seeds=seeds, rng=rng + 1,
                              loss="logistic", progress=False)
            sims = {k: (float(np.ravel(getattr(sim, f"{k}_mean"))[0]),
                        float(np.ravel(getattr(sim, f"{k}_stderr"))[0])) for k in MEASURES}
        rows.append(_row(name, alpha, lam, seeds, sims, th, spec["held"]))
    out = dict(site=name, rows=rows, cavity_distance=chk.covariance_distance,
               cavity_kurtosis=chk.excess_kurtosis,
               simulation=("exact enumeration" if exact is not None else "rm.simulate (sampler)")
               + ", pseudo-likelihood fits")
    if spec["curves"]:
        out["curves"] = _curves(task, spec["alphas"], lam, s["ising_fig_points"], loss="logistic")
    return out


class _ExactIsing:
    """Training sets drawn from the exact Boltzmann law of an Ising model (L <= 16), exact tests."""

    def __init__(self, model, teacher: np.ndarray, rng: int) -> None:
        from replica_mlm.tasks.ising_site import spins

        allx = spins(model.all_sequences())
        self.prob = model.boltzmann_probabilities()
        self.x, self.y = allx[:, 1:], allx[:, 0]
        self.teacher = teacher
        self.p_plus = expit(self.x @ teacher)
        # the generator of benchmarks/ising_mixture.py (seed 1000 L + instance, shifted by the root
        # seed): at rng = 0 the numbers are those of the table in docs/discrete.md
        self.gen = np.random.default_rng(1000 * model.L + rng)

    def simulate(self, n: int, lam: float, seeds: int) -> dict:
        from replica_mlm.learners.pseudo_likelihood import fit_site

        vals = {k: [] for k in MEASURES}
        for _ in range(seeds):
            idx = self.gen.choice(self.prob.size, size=n, p=self.prob)
            w, _ = fit_site(self.x[idx], self.y[idx], lam)
            loss, err = _exact_measures(w, self.x, self.p_plus, self.prob)
            vals["test_loss"].append(loss)
            vals["eg"].append(err)
            vals["estimation_error"].append(float(np.sum((w - self.teacher) ** 2)))
        return {k: tuple(float(v) for v in mean_stderr(np.array(v))) for k, v in vals.items()}


def potts_site(s: dict, rng: int) -> dict:
    """Both theories against ``rm.simulate`` on the q = 3 Potts site of docs/multiclass.md."""
    import replica_mlm as rm

    J = rm.PottsModel.random_ising(L=12, beta=1.0, seed=3).couplings
    model = rm.PottsModel(couplings=J, colours=np.eye(3), beta=1.5)
    task = model.masked_site(0, rng=rng)
    chk = task.mixture.cavity_check()
    name, lam, rows = "Potts q = 3, L = 12, beta = 1.5", s["lam"], []
    for alpha in s["potts_alphas"]:
        th = {t: rm.solve(task, alpha=alpha, lam=lam, theory=t) for t in THEORIES}
        sim = rm.simulate(model, site=0, alpha=alpha, lam=lam, seeds=s["potts_seeds"], rng=rng + 1,
                          loss="cross_entropy")
        sims = {k: (float(np.ravel(getattr(sim, f"{k}_mean"))[0]),
                    float(np.ravel(getattr(sim, f"{k}_stderr"))[0])) for k in MEASURES}
        rows.append(_row(name, alpha, lam, s["potts_seeds"], sims, th, True))
    return dict(site=name, rows=rows, cavity_distance=chk.covariance_distance,
                cavity_kurtosis=chk.excess_kurtosis, simulation="rm.simulate (multinomial pseudo-likelihood)",
                curves=_curves(task, s["potts_alphas"], lam, s["potts_fig_points"]))


def compute(quick: bool, rng: int) -> tuple[dict, list[dict]]:
    """Settings and the per-site results (held sites first, then the reported ones)."""
    s = settings(quick)
    held = [spec for spec in s["ising"] if spec["held"]]
    sites = [*(ising_site(spec, s, rng) for spec in held), potts_site(s, rng)]
    sites += [ising_site(spec, s, rng) for spec in s["ising"] if not spec["held"]]
    return s, sites


def _fmt(r: dict) -> str:
    return (f"{r['site']}, alpha = {r['alpha']:g}: " + ", ".join(
        f"{k} z {r[f'{k}_z_gaussian']:+.1f} (gaussian) / {r[f'{k}_z_mixture']:+.1f} (mixture)"
        for k in MEASURES))


def checks(sites: list[dict]) -> list[Check]:
    """``discrete.mixture_agreement`` and ``discrete.mixture_matters`` on the held points."""
    held = [r for site in sites for r in site["rows"] if r["held"]]
    other = [r for site in sites for r in site["rows"] if not r["held"]]
    zm = max(abs(r[f"{k}_z_mixture"]) for r in held for k in MEASURES)
    zg = max(abs(r[f"{k}_z_gaussian"]) for r in held for k in MEASURES)
    seeds = ", ".join(f"{site['site']}: {site['rows'][0]['seeds']}" for site in sites
                      if site["rows"][0]["held"])
    cav = "; ".join(f"{site['site']}: S distance {site['cavity_distance']:.4f}" for site in sites)
    detail = (f"{len(held)} points x {len(MEASURES)} measures (test loss, error rate, estimation error), "
              f"lam = {held[0]['lam']:g}, z = (simulation - theory) / SE over seeds ({seeds}): "
              + "; ".join(_fmt(r) for r in held))
    notes = ("; not held (L = 13: non-Gaussian cavity fields at strong coupling, finite-L residual at "
             "beta = 0.5 with more seeds): "
             + "; ".join(_fmt(r) for r in other) if other else "")
    return [
        Check("discrete.mixture_agreement", zm <= Z_MAX, zm, Z_MAX,
              f"theory='mixture' within 3 SE of ERM on discrete sequences: largest |z| = {zm:.2f}; "
              + detail + notes + f". Cavity check: {cav}"),
        Check("discrete.mixture_matters", zg > Z_MAX, zg, Z_MAX,
              f"at the same points theory='gaussian' (Gaussian equivalence) is off: largest |z| = {zg:.2f} "
              f"> 3 (the simulations tell the two theories apart)"),
    ]
