"""Real protein families: alignments, structures, contacts and Potts fits on them."""
