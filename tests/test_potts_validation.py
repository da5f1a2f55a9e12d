"""The ``replica-mlm potts`` command (its quick section runs in tests/test_validation_suite.py)."""

from click.testing import CliRunner

from replica_mlm.cli import main


def test_cli_bad_options_exit_2(tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["potts", "--seed", "-1", "--out", str(tmp_path)])
    assert res.exit_code == 2
    res = runner.invoke(main, ["potts", "--bogus"])
    assert res.exit_code == 2
    res = runner.invoke(main, ["potts", "--help"])
    assert res.exit_code == 0 and "--quick / --full" in res.output


# ---------------------------------------------------------------------- the section's parts
import dataclasses  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from replica_mlm._base.pool import run_tasks  # noqa: E402
from replica_mlm.potts.instances import tuned_instance  # noqa: E402
from replica_mlm.potts.model import PottsModel  # noqa: E402
from replica_mlm.validation import potts_section as section  # noqa: E402


def _small_data():
    pm = PottsModel.random(L=6, q=4, seed=3, beta=1.0)
    data = pm.sample(900, rng=4, sweeps_between=4, burn_in=100)
    return pm, data[:600], data[600:]


def _tiny_settings():
    return dataclasses.replace(section.settings_for(True), Ms=(100, 200), reps=1,
                               small_lam_Ms=(5, 10), small_lam_reps=1, plm_max_M=100)


def test_fits_do_not_depend_on_workers():
    pm, train, test = _small_data()
    st = _tiny_settings()
    tasks, keys = section._fit_tasks(st, train, test, pm.coupling_tensor(), gtol=1e-6, rng=0)
    assert sorted(k[0] for k in keys) == ["fa", "fa", "plm", "small", "small", "soft", "soft"]
    serial = run_tasks(tasks, workers=1)
    pooled = run_tasks(tasks, workers=2)
    for key, a, b in zip(keys, serial, pooled, strict=True):
        for name in ("test_loss", "rec", "rec_sym", "stationarity", "iterations", "seed"):
            assert a[name] == b[name], (key, name)
    # every fit of this toy set reaches the target it was given
    assert max(r["stationarity"] for r in serial if r["variant"] == "linear") <= 1e-6


def test_fits_converged_check_fails_on_an_unconverged_fit():
    pm, train, test = _small_data()
    kw = dict(seqs=train[:200], q=4, lam=1e-3, variant="linear", monitor=False, test=test,
              W_true=pm.coupling_tensor(), gtol=1e-7, newton_iter=0, plm_max_iter=10,
              plm_ftol=section.PottsSettings.plm_ftol, seed=1)
    stopped = dict(section._fit_task(max_iter=2, **kw), task=["fa", "0", "0"])
    done = dict(section._fit_task(max_iter=500, **dict(kw, newton_iter=50)), task=["fa", "0", "1"])
    se = 0.05
    assert done["stationarity"] <= section.KKT_FRACTION * se < stopped["stationarity"]
    assert section.fits_converged_check([done], se).passed
    check = section.fits_converged_check([done, stopped], se)
    assert not check.passed and check.value["worst_fit"] == ["fa", "0", "0"]
    # the full-block fit's stationarity is measured on its own objective
    plm = section._fit_task(**dict(kw, variant="full", plm_max_iter=2, max_iter=2))
    plm_done = section._fit_task(**dict(kw, variant="full", plm_max_iter=3000, max_iter=2))
    assert plm_done["stationarity"] < 1e-3 * plm["stationarity"]


def test_instance_rule_rejects_on_the_prescan_and_records_why():
    gens = [np.random.default_rng(s) for s in np.random.SeedSequence(0).spawn(6)]
    with pytest.raises(RuntimeError, match=r"pre-scan: mean Hamming distance .* above the target"):
        tuned_instance(L=6, q=4, target_hamming=0.3, method="auto", gens=gens,
                               max_beta=1.5)
