"""The symbolic side of the theory: sympy potentials, the equations derived from them, their
compiled form and its cache, and their display.
"""
