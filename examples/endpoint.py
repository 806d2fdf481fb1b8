"""Web endpoints: deploy this file with

    levers9 deploy examples/endpoint.py

and the controlplane's HTTP listener serves `greet` to anyone and `add`
to callers with a token of your workspace (see docs/endpoints.md):

    curl -X POST http://127.0.0.1:1994/endpoint/default/greet \
         -H 'content-type: application/json' -d '{"name": "Ada"}'
    curl 'http://127.0.0.1:1994/endpoint/default/greet?name=Bob'
    curl -X POST http://127.0.0.1:1994/endpoint/default/add \
         -H "authorization: Bearer $LEVERS9_TOKEN" -d '{"numbers": [1, 2, 3]}'

`default` is the workspace's name (`levers9 workspace show`).
"""

from levers9 import endpoint


@endpoint(name="greet", public=True)
def greet(name="world"):
    return {"greeting": f"hello {name}"}


@endpoint(concurrency=8, max_containers=4, timeout=30)
def add(numbers):
    if not all(isinstance(n, (int, float)) for n in numbers):
        # An exception is a 500 whose message is "ValueError: ...".
        raise ValueError("add takes a list of numbers")
    return {"sum": sum(numbers)}


if __name__ == "__main__":
    # An endpoint is a function too: this runs it in a container, no HTTP.
    print(add.remote([1, 2, 3]))
