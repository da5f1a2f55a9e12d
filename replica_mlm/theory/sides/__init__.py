"""The two sides of the saddle point: losses (with their convexity) and label channels, and the
integrals over them.
"""
