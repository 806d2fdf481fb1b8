"""Secrets given to a function by name and inline: run it with
`python examples/secrets.py` once `levers9 up` is running.

`levers9 secret create GREETING` (value on stdin) makes the named one; the
inline one is sealed by the controlplane on the first call (docs/functions.md#secrets).
"""

import os

from levers9 import Secret, function

# Read here, sent once to the secret service, never stored in clear.
api_token = os.environ.get("EXAMPLE_API_TOKEN", "token-from-this-machine")


@function(secrets=[Secret.from_dict({"API_TOKEN": api_token})])
def token_length():
    return len(os.environ["API_TOKEN"])


@function(secrets=[Secret.from_name("GREETING")])
def greet(name):
    return f"{os.environ['GREETING']}, {name}!"


if __name__ == "__main__":
    print("inline secret reached the container:", token_length.remote() == len(api_token))
    print(greet.remote("levers9"))
