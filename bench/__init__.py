"""phase performance benchmarks (not tests): run with `make bench` or bench/run.py."""
