"""Files in a volume from here and from functions: run it with
`python examples/volumes.py` once `levers9 up` is running.

The same as `levers9 volume create/cp/ls/rm`, from Python.
"""

from levers9 import Volume, function

vol = Volume.from_name("examples", mount_path="/data", create_if_missing=True)


@function(volumes=[vol])
def count_words(path):
    # Inside the container the volume is a directory: plain file calls.
    with open(f"/data/{path}") as f:
        return len(f.read().split())


@function(volumes=[vol])
def write_summary(path, words):
    with open(f"/data/{path}.summary", "w") as f:
        f.write(f"{path}: {words} words\n")


if __name__ == "__main__":
    vol.put_file(b"the quick brown fox jumps over the lazy dog", "/texts/fox.txt")
    words = count_words.remote("texts/fox.txt")
    write_summary.remote("texts/fox.txt", words)
    for entry in vol.iterdir("/texts"):
        print(f"{entry.path:28} {entry.type:4} {entry.size:6} {entry.modified_at}")
    print(vol.read_file("/texts/fox.txt.summary").decode(), end="")
    vol.remove_file("/texts", recursive=True)
