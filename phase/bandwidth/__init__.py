"""This machine's memory bandwidth, measured STREAM-style.

    stream         the measurement: copy and triad over arrays far larger than the cache
    stream_kernel  its C kernels (stream_kernel.c, shipped beside it), compiled on first use
"""
