"""`tools/run.sh python [ARGS...]` runs /usr/bin/python3 with this target's
runfiles on PYTHONPATH; this file only marks the target."""
