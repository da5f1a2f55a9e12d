"""``python -m replica_mlm.cli``: the ``replica-mlm`` command line."""

from replica_mlm.cli import main

main(prog_name="replica-mlm")
