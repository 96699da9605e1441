"""Running a sweep: every point x repeat through a backend into the tidy CSV, with a JSON
sidecar, resume, adaptive repeats and a summary across repeats.

The parts, each its own module:
  bench     the backend and what it tells about the machine (info, facts, conditions)
  plan      points x repeats minus what is done; the repeat policy (fixed, adaptive)
  resume    what an existing CSV holds, and whether it may be kept
  execute   one run of one point -> rows, with its status and reason
  record    rows into NAME.csv and NAME.hist.csv (or into memory for `pmemlab run`)
  sidecar   NAME.json: what ran, where, and each session
  summary   NAME.summary.csv: mean, stddev, 95 % CI per point
  progress  the progress bar
  files     the four file names of a sweep
  core      Sweep: the loop that ties them together
  build     the one way a sweep is made: points, lanes (the targets they run on; the backend
            as it is is an axis of one), into memory or files; one_point_sweep for `pmemlab run`
"""

from pmemlab.sweep.bench import Bench
from pmemlab.sweep.build import Files, Lane, build, one_point_sweep
from pmemlab.sweep.core import Sweep, SweepOptions, SweepReport
from pmemlab.sweep.execute import AxisExecutor, Executor, RunResult, classify, refusal_reason
from pmemlab.sweep.files import SweepFiles, check_output, histogram_path, sidecar_path, summary_path
from pmemlab.sweep.plan import AdaptiveRepeats, FixedRepeats, Observations, Plan, metric_values, policy_for
from pmemlab.sweep.progress import Progress
from pmemlab.sweep.record import CsvRecorder, MemoryRecorder
from pmemlab.sweep.resume import (
    RESUME_CONDITIONS, ResumeState, check_resumable, fingerprint, load_done, resume, resume_identity,
)
from pmemlab.sweep.sidecar import Sidecar, media_notes, read_previous
from pmemlab.sweep.summary import SUMMARY_SKIP, summarize_csv, summarize_frame, write_summary

__all__ = [
    "RESUME_CONDITIONS", "SUMMARY_SKIP",
    "AdaptiveRepeats", "AxisExecutor", "Bench", "CsvRecorder", "Executor", "Files", "FixedRepeats", "Lane",
    "MemoryRecorder", "Observations", "Plan",
    "Progress", "ResumeState", "RunResult", "Sidecar", "Sweep", "SweepFiles", "SweepOptions", "SweepReport",
    "build", "check_output", "check_resumable", "classify", "fingerprint", "histogram_path", "load_done", "media_notes", "metric_values",
    "one_point_sweep", "policy_for", "read_previous", "refusal_reason", "resume", "resume_identity", "sidecar_path", "summarize_csv",
    "summarize_frame", "summary_path", "write_summary",
]
