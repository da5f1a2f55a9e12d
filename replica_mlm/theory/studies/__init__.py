"""What is computed from the saddle point: learning curves, optimal lambda and phase diagrams,
asymptotic expansions, separability thresholds.
"""
