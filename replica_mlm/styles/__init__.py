"""Matplotlib style sheets shipped with replica_mlm (``plt.style.use("replica_mlm.styles.paper")``)."""
