"""NVIDIA GPUs: NVML's energy counters and power, CUDA's device list, and other work on a GPU."""
