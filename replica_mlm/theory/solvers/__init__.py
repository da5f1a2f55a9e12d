"""The solvers of the saddle point: the reduced root (numpy and mpmath), the general engine, the
multi-class solver and a slow independent reference.
"""
