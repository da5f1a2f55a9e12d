"""The discrete generalised Potts model: the model, its Gibbs sampler and diagnostics, parallel
tempering, the temperature tuner, reweighting and autocorrelations.
"""
