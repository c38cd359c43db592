"""Sensor snapshots: recording a machine's sensors, and replaying them."""
