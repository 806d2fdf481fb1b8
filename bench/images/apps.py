"""Two functions in two images that share the base image (bench.py)."""

from levers9 import Image, function


FIRST = Image().add_commands(["echo first > /first"])
SECOND = Image().add_commands(["echo second > /second"])


@function(image=FIRST)
def first():
    return open("/first").read()


@function(image=SECOND)
def second():
    return open("/second").read()
