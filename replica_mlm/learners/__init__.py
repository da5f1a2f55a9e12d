"""What learns: ERM on Gaussian covariates and its simulations, pseudo-likelihood (binary,
multinomial, full couplings), factored attention and the vanilla transformer.
"""
