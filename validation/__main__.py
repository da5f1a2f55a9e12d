"""``python -m validation``: run the validation suite from a checkout.

The suite itself lives in :mod:`replica_mlm.validation` so that ``replica-mlm validate``
works after a plain ``pip install .``; this entry point only forwards to it.
"""

from replica_mlm.cli import main

if __name__ == "__main__":
    main(["validate", *__import__("sys").argv[1:]], prog_name="python -m validation")
