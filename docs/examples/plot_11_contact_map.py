"""
Contacts of the S1A serine proteases from their alignment
==========================================================

The S1A alignment (1470 sequences, the 218 columns with at most 20 % gaps) and the structure 3tgi
mapped onto its columns, from ``rm.datasets.protein_family`` (the ``[proteins]`` extra). Couplings
by mean-field DCA (80 % identity reweighting, pseudocount 0.5), one score per pair of columns
(Frobenius norm over the amino acids in the zero-sum gauge, average product correction), and the
top L predicted pairs with ``j - i >= 6`` drawn over the structure's contacts (C-beta < 8 A).
plmDCA and factored attention (``rm.fit_potts``) take minutes on this family: their rows of the
contact table are printed by ``benchmarks/bench_contacts.py`` and quoted on :doc:`/proteins`.
"""

import replica_mlm as rm
from replica_mlm.figures.protein_families import plot_contact_map
from replica_mlm.proteins.contacts import coupling_scores
from replica_mlm.proteins.mean_field import mean_field_couplings

msa, structure = rm.datasets.protein_family("S1A")
print(f"L = {msa.L} columns, N = {msa.N} sequences, N_eff = {msa.effective_size:.0f}, "
      f"mapping identity {structure.identity:.3f}")
scores = coupling_scores(mean_field_couplings(msa, reweight=0.8, pseudocount=0.5), apc=True)

# %%
# Precision of the top L/5, L/2 and L pairs:
precision = {top: rm.contact_precision(scores, structure, top=top) for top in ("L/5", "L/2", "L")}
print({top: round(p, 3) for top, p in precision.items()})

fig = plot_contact_map(scores, structure.distances, top=msa.L,
                       title=f"S1A, mean-field DCA: precision {precision['L/5']:.2f} at top L/5")
