"""``python -m validation``: run the validation suite from a checkout.

The suite itself lives in :mod:`replica_mlm.validation` so that ``replica-mlm validate``
works after a plain ``pip install .``; this entry point only forwards to it. Its usage line reads
``python -m validation validate [OPTIONS]`` (the command's name after the program's), so that
form is accepted too: a leading ``validate`` is the same command.
"""

import sys

from replica_mlm.cli import main

if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["validate"]:
        args = args[1:]
    main(["validate", *args], prog_name="python -m validation")
