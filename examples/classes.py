"""Classes: state made once per container (@enter), methods called remotely
(@method), cleanup when the container stops (@exit). Run it with
`python examples/classes.py` once `levers9 up` is running."""

import os
import time

from levers9 import cls, enter, exit, method


@cls(cpu=0.25, memory="256Mi", keep_warm_seconds=30)
class Vocabulary:
    def __init__(self, language: str = "en"):
        self.language = language

    @enter
    def load(self):
        # Stands in for loading a model: done once per container, not per call.
        time.sleep(1)
        self.words = {"en": ["zero", "one", "two", "three"], "fr": ["zéro", "un", "deux", "trois"]}[self.language]
        print(f"loaded {self.language} in container process {os.getpid()}")

    @method
    def spell(self, n: int) -> str:
        return self.words[n]

    @method
    def count_down(self, n: int):
        # A method that yields: its items stream to the caller as they come.
        for i in range(n, -1, -1):
            yield self.words[i]

    @exit
    def close(self):
        print(f"container process {os.getpid()} stopping")


if __name__ == "__main__":
    english = Vocabulary()
    print(english.spell.remote(1))                     # one: after a cold start and @enter
    print(list(english.spell.map(range(4))))           # the same containers, no @enter again
    print(list(Vocabulary("fr").spell.map([2, 3])))    # other parameters: another stub, its own containers
    for word in english.count_down.remote_gen(3):      # three, two, one, zero, each as it is yielded
        print(word)
