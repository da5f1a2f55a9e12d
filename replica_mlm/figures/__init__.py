"""The figure modules behind :mod:`replica_mlm.plotting`: the style, learning curves, phase diagrams and
protein families (docs/figures.md)."""
