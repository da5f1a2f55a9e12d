"""Numerical implementations of the custom functions of the losses and channels, without sympy.

:mod:`.expressions` lambdifies with them; :mod:`.compiled_cache` runs the cached sources of the
built-in losses and channels (its ``"numeric"`` backend) with them, so that a process with a warm
cache computes with the general engine without importing sympy (docs/theory.md, section "The
general engine").
"""

from __future__ import annotations

import numpy as np
from scipy import special

#: name in the generated code -> function (``Softplus(x) = log(1 + exp(x))`` and
#: ``Sigmoid(x) = 1 / (1 + exp(-x))``, both evaluated stably)
NUMERIC = {"Softplus": lambda x: np.logaddexp(0.0, x), "Sigmoid": special.expit, "erf": special.erf,
           "erfc": special.erfc}
