"""phase performance benchmarks (not tests): run with `make bench` or `python -m bench.run`."""
