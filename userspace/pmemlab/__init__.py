"""pmemlab: userspace controller of the pmemlab.ko persistent-memory microbenchmark module."""

__version__ = "0.1.0"
