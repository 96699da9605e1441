"""Sweep configs (TOML): parse, expand into points, validate everything before a run.

Format (see configs/README for the full description):

    [sweep]
    name = "bw-size"                 # default: the file name
    repeats = 3                      # runs per point
    filters = ["access_size <= stride or stride == 0"]   # keep points where all are true
    # target = "/dev/pmem0"          # refuse to run on another target
    # timeout_s = 600                # per run
    # on_unsupported = "skip"        # or "error": points this machine cannot run
    [sweep.adaptive]                 # optional: repeat until the CI is tight enough
    metric = "bw_gbps"
    ci_target = 0.02                 # 95 % CI half-width / mean
    max_repeats = 20

    [base]                           # parameters shared by every point
    mode = "bandwidth"
    duration_ms = 500

    [axes]                           # cartesian product, in this order (last varies fastest)
    op = ["load", "ntstore", "store+clwb"]
    access_size = "64..64K *2"       # range: START..END, then *FACTOR or +STEP (default +1)

    [[zip]]                          # zipped axis: lists of one length, walked together
    threads = [1, 2, 4]
    cpus = ["0", "0-1", "0-3"]

Every problem names the key, the value, the allowed range and the config line.

The package by concern: lines (where a key is written), model (SweepConfig, Axis, Point),
problems (collected with their lines), ranges, filters, scales, targets, adaptive, axes,
parse (load_config, parse_config), build (sweep_config: a config given as values, the
one-liners' and curves') and expand (points).
"""

from pmemlab.config.adaptive import ADAPTIVE_KEYS, adaptive_metrics
from pmemlab.config.build import sweep_config
from pmemlab.config.expand import MAX_POINTS, command_line_problems, count_points, expand, one_point, point_key
from pmemlab.config.filters import compile_filter, eval_filter
from pmemlab.config.lines import LineIndex
from pmemlab.config.model import FULL_SCALE, SET_ORIGIN, Adaptive, Axis, Point, SweepConfig
from pmemlab.config.parse import SWEEP_KEYS, TOP_KEYS, load_config, parse_config
from pmemlab.config.problems import Problems
from pmemlab.config.ranges import MAX_RANGE_VALUES, RANGE_RE, axis_values, expand_range
from pmemlab.config.scales import apply_scale

__all__ = [
    "ADAPTIVE_KEYS", "FULL_SCALE", "MAX_POINTS", "MAX_RANGE_VALUES",
    "RANGE_RE", "SET_ORIGIN", "SWEEP_KEYS", "TOP_KEYS",
    "Adaptive", "Axis", "LineIndex", "Point", "Problems", "SweepConfig",
    "adaptive_metrics", "apply_scale", "axis_values", "command_line_problems", "compile_filter", "count_points",
    "eval_filter", "expand", "expand_range", "load_config", "one_point", "parse_config", "point_key", "sweep_config",
]
