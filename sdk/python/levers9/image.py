"""Which container image a function runs in."""

from __future__ import annotations


class Image:
    """A container image for a function.

    ``Image()`` is the controlplane's base Python image.
    ``Image.from_registry("ghcr.io/acme/app:1.2")`` is any image with a
    Python 3 (3.9 or newer) on its PATH as ``python3``: the SDK and the
    function's code are mounted into it, so nothing needs installing.
    """

    def __init__(self):
        # Empty means "the configured base image" on the wire (StubConfig.image).
        self.ref = ""

    @classmethod
    def from_registry(cls, ref: str) -> "Image":
        """An image from a registry, by reference (``name:tag`` or ``name@sha256:...``)."""
        if not isinstance(ref, str) or not ref.strip():
            raise ValueError(f"Image.from_registry needs an image reference like 'python:3.12-slim'; got {ref!r}")
        if any(c.isspace() for c in ref.strip()):
            raise ValueError(f"image reference {ref!r} contains whitespace")
        image = cls()
        image.ref = ref.strip()
        return image

    def __eq__(self, other):
        return isinstance(other, Image) and other.ref == self.ref

    def __hash__(self):
        return hash(self.ref)

    def __repr__(self):
        return f"Image.from_registry({self.ref!r})" if self.ref else "Image()"
