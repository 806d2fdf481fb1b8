"""Functions that run on their own: deploy this file with

    levers9 deploy examples/schedule.py

and the controlplane calls `heartbeat` every 5 minutes and `nightly_report`
at 03:00 UTC, each run a task (`levers9 task list`). `levers9 schedule list`
shows when each ran last and runs next; deploying the file again without a
schedule removes it. Running this file with Python (or calling the functions
with `.remote()`) does not start any schedule.
"""

import datetime

from levers9 import Cron, Period, function


@function(schedule=Period(minutes=5))
def heartbeat():
    # Called with no arguments at :00, :05, :10… of every hour (UTC).
    now = datetime.datetime.now(datetime.timezone.utc)
    print(f"heartbeat at {now:%H:%M:%S}")
    return now.isoformat()


@function(schedule=Cron("0 3 * * *"), timeout=600)
def nightly_report(day=None):
    # A scheduled function takes no arguments, or only ones with defaults;
    # called by hand, it can still be given them.
    day = day or datetime.date.today().isoformat()
    return f"report for {day}"


if __name__ == "__main__":
    # A plain call runs once, now; the schedules need `levers9 deploy`.
    print(heartbeat.remote())
    print(nightly_report.remote("2026-01-01"))
