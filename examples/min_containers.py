"""A function that never waits for a cold start: deploy this file with

    levers9 deploy examples/min_containers.py

and the controlplane keeps one container of `classify` running, even with no
calls (`levers9 container list` shows it). Calls go to it; a burst starts more
(up to max_containers), and those scale back down to one after
keep_warm_seconds. Deploying the file again with min_containers=0 lets the
container go. Running this file with Python (`.remote()` without a deploy)
keeps no container warm.
"""

import time

from levers9 import function

# Loaded once per container, so only a cold start pays for it.
_STARTED = time.time()


@function(min_containers=1, max_containers=4, keep_warm_seconds=30)
def classify(text: str) -> dict:
    label = "question" if text.rstrip().endswith("?") else "statement"
    return {"label": label, "container_age_s": round(time.time() - _STARTED, 1)}


if __name__ == "__main__":
    from levers9.deployment import lookup

    # Once deployed: a warm call, served by the floor's container.
    print(lookup("min_containers", "classify").remote("is it warm?"))
