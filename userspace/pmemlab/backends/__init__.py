"""What runs a measurement: the `Backend` protocol and `RunOutcome` (protocol), the kernel
module through its sysfs directory (module: `Module`), the userspace runner pmemlab-run (user:
`UserBackend`), the target facts both report, read by one rule (facts), and `BackendSpec`, which
turns command-line choices into one of them (spec)."""
