"""Dict and Queue: the caller fills a queue, functions in containers take
jobs from it and write results into a dict (see docs/dict-queue.md).

    python examples/dict_queue.py
"""

import queue

from levers9 import Dict, Queue, function

results = Dict.from_name("example-results", create_if_missing=True)
jobs = Queue.from_name("example-jobs", create_if_missing=True)


@function
def square_jobs():
    """Takes jobs until none comes for 2 s; no token is needed in here."""
    done = 0
    while True:
        try:
            n = jobs.get(timeout=2)
        except queue.Empty:
            return done
        results[n] = n * n
        done += 1


if __name__ == "__main__":
    results.clear()
    jobs.put_many(range(20))
    # Two consumers at once; each job is taken exactly once.
    calls = [square_jobs.spawn() for _ in range(2)]
    handled = [call.get() for call in calls]
    print(f"handled {sum(handled)} jobs")
    print(sorted(results.items()))
