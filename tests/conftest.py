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


def pytest_collection_modifyitems(config, items):
    # the two halves of the quick validation suite (about 2 min each, marked xdist_group) go first,
    # so that pytest-xdist hands one to each worker at the start instead of both at the end
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="long sweep: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture(scope="session")
def potts300():
    """One Gaussian Potts instance with p = 300 unmasked sites (L = 301, shift 3)."""
    return rm.GaussianPotts.random(L=301, shift=3.0, seed=1)


@pytest.fixture(scope="session")
def site300(potts300):
    return potts300.masked_site(0)
