"""The interface every sensor backend implements, and the machinery all of them share:
reading, sampling, window energy, edges, update periods, the primary-energy choice."""
