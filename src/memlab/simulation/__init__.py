"""The simulated model: a test instrument with declared behaviour that answers from a labeled
dataset, so every metric can be checked against the value its profile implies."""
