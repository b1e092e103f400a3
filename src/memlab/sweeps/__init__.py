"""Sweeps: grids resolved into lanes, replays on a virtual clock, run directories."""
