"""Output kept after the caller has gone: spawn a call that prints, leave,
and read what it printed later with `levers9 logs` (docs/logs.md).

    python examples/logs.py            # prints the task id and the command
    levers9 logs TASK_ID               # its stdout on stdout, stderr on stderr
    levers9 logs TASK_ID -f            # or follow it until it finishes
"""

import sys
import time

from levers9 import function


@function(cpu=0.25, memory="256Mi")
def report(steps):
    for step in range(steps):
        print(f"step {step} of {steps}", flush=True)
        time.sleep(1)
    print("done, with one warning", file=sys.stderr, flush=True)
    return steps


if __name__ == "__main__":
    call = report.spawn(5)
    # Nobody waits for the call: its output is still kept for 7 days.
    print(f"spawned {call.task_id}: levers9 logs {call.task_id} -f")
