"""Generators: a function that yields streams its items to the caller as it
yields them. Run it with `python examples/generators.py` once `levers9 up`
is running."""

import asyncio
import time

from levers9 import function


@function
def countdown(n):
    for i in range(n, 0, -1):
        time.sleep(0.2)
        yield i


@function
async def words(text):
    # An async generator works the same way.
    for word in text.split():
        await asyncio.sleep(0.1)
        yield word.upper()


@function
def numbers():
    # Endless: the caller takes what it wants and stops it (the runner
    # closes the generator at its next item, and its container stays warm).
    i = 0
    while True:
        yield i
        i += 1


async def shout(text):
    return [word async for word in words.remote_gen.aio(text)]


if __name__ == "__main__":
    for i in countdown.remote_gen(5):
        print("countdown", i)  # each arrives as it is yielded, not at the end
    print(asyncio.run(shout("streams as it goes")))
    for i in numbers.remote_gen():
        if i == 100:
            break
    print("took 100 numbers from an endless generator")
