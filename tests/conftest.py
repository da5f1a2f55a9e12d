import os

# The tests run many small dense problems: one BLAS thread each is fastest and keeps the suite's
# run time steady on a shared machine (threads oversubscribe when other jobs run).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# the compiled sympy equations are cached on disk (theory/compiled_cache.py): the tests use a cache
# folder of their own in the temporary directory, shared by the workers and by later runs
_user = os.getuid() if hasattr(os, "getuid") else 0
os.environ.setdefault("REPLICA_MLM_CACHE_DIR", os.path.join(
    __import__("tempfile").gettempdir(), f"replica_mlm-test-cache-{_user}"))

import pytest  # noqa: E402

import replica_mlm as rm  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


@pytest.hookimpl(trylast=True)  # after -k / -m deselection: the order below needs the final list
def pytest_collection_modifyitems(config, items):
    _one_half_at_the_start_of_each_worker(items)
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="long sweep: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


def _one_half_at_the_start_of_each_worker(items):
    """Put the first test marked ``xdist_group`` first and the second in the middle of ``items``.

    The two halves of the quick validation suite (about 2 CPU-minutes each) are marked
    ``xdist_group``. Under ``--dist worksteal`` (pyproject.toml) pytest-xdist hands the first half of
    the list to one worker and the second half to the other, and an idle worker then steals from the
    busy one; so each worker starts with one of the halves, and the end is balanced. (Under
    ``--dist load`` both halves went to the first worker's initial chunk of about 85 tests: that
    worker ran 4 minutes of validation plus its chunk while the other one idled at the end.)
    """
    heavy = [item for item in items if item.get_closest_marker("xdist_group") is not None]
    if len(heavy) != 2:
        return
    rest = [item for item in items if item.get_closest_marker("xdist_group") is None]
    middle = len(items) // 2 - 1  # position in ``rest`` that puts the second half at len(items) // 2
    items[:] = [heavy[0], *rest[:middle], heavy[1], *rest[middle:]]


@pytest.fixture(scope="session")
def potts300():
    """One Gaussian Potts instance with p = 300 unmasked sites (L = 301, shift 3)."""
    return rm.GaussianPotts.random(L=301, shift=3.0, seed=1)


@pytest.fixture(scope="session")
def site300(potts300):
    return potts300.masked_site(0)
