"""What is learnt: the learning tasks (a Gaussian site and its spectrum, the Gaussian Potts
model and its L -> infinity limit, the sites of discrete Ising and Potts models).
"""
