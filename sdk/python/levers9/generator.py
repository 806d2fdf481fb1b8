"""Calling a generator function: its items, streamed over one Run.

# Guarantees
- One `remote_gen` is one Run stream: a start with ``generator`` set, the
  one input, then ``ItemsReceived`` acknowledgements; the request side is
  closed once the result came (or the call ends early).
- Items are yielded in the order the generator yielded them, each as soon
  as it arrives; the function's output is printed as it comes, before the
  items it printed ahead of.
- Back-pressure: an item counts as taken once the caller asks for the next
  one. The count is acknowledged every `ACK_EVERY_ITEMS` items or
  `ACK_EVERY_BYTES` bytes taken, half the runner's window (16 items,
  16 MiB; `levers9.runner.stream`), so the runner never waits on an
  acknowledgement the caller is holding back, and never runs more than a
  window ahead of the caller.
- An exception the generator raises is raised here after the items it
  yielded before it. A retry (or a rerun after a lost worker) after items
  were taken would yield them again, so it ends the call with `TaskFailed`
  instead; one before the first item is transparent.
- Leaving early (``break``, an exception, Ctrl-C, a cancelled ``.aio``)
  cancels the call; the runner stops the generator at its next item.
"""

from __future__ import annotations

import queue
from typing import Iterator, Optional

import cloudpickle
import grpc

from .client import Client
from .errors import ControlplaneError, RemoteError, TaskCancelled, TaskFailed
from .invoke import Cancellation
from .outcome import outcome_value
from .output import OutputPrinter
from .v1 import function_pb2 as pb

ACK_EVERY_ITEMS = 8
ACK_EVERY_BYTES = 8 * 1024 * 1024
# Closes the request side.
_CLOSE = None


def _requests(stub_id: str, payload: bytes, acks: "queue.SimpleQueue"):
    yield pb.RunRequest(start=pb.RunStart(stub_id=stub_id, generator=True))
    yield pb.RunRequest(input=pb.RunInput(payload=payload))
    while True:
        ack = acks.get()
        if ack is _CLOSE:
            return
        yield pb.RunRequest(received=ack)


def run_generator(
    client: Client, stub_id: str, payload: bytes, cancellation: Optional[Cancellation] = None
) -> Iterator[object]:
    """The items of one call of a generator stub, then its exception if it raised."""
    acks: queue.SimpleQueue = queue.SimpleQueue()
    call = client.run(_requests(stub_id, payload, acks))
    if cancellation is not None:
        cancellation.attach(call)
    printer = OutputPrinter()
    received = 0
    unacked_items = unacked_bytes = 0
    outcome = None
    completed = False
    try:
        for event in call:
            kind = event.WhichOneof("kind")
            if kind == "item":
                item = event.item
                if item.item_index != received:
                    raise TaskFailed(
                        f"the generator's task {item.task_id} started over after {received} items "
                        f"(its worker was lost); items already yielded cannot be taken back, so the call fails"
                    )
                received += 1
                value = _item_value(item)
                yield value
                # Taken: the caller asked for the next one.
                unacked_items += 1
                unacked_bytes += len(item.payload)
                if unacked_items >= ACK_EVERY_ITEMS or unacked_bytes >= ACK_EVERY_BYTES:
                    acks.put(pb.ItemsReceived(task_id=item.task_id, received=received))
                    unacked_items = unacked_bytes = 0
            elif kind == "output":
                printer.output(event.output)
            elif kind == "retrying":
                if received:
                    raise TaskFailed(
                        f"the generator failed after {received} items and would start over "
                        f"({event.retrying.reason}); a generator is retried only before its first item"
                    )
                printer.retrying(event.retrying)
            elif kind == "result":
                outcome = event.result
                printer.task_done(outcome.task_id)
        completed = True
    except grpc.RpcError as e:
        if cancellation is not None and cancellation.cancelled:
            raise TaskCancelled("the call was cancelled by the caller") from None
        raise client.translate(e, "Run") from None
    finally:
        acks.put(_CLOSE)
        if not completed:
            call.cancel()
        printer.close()
    if outcome is None:
        raise ControlplaneError("the controlplane ended the generator's Run without a result")
    ok, value = outcome_value(outcome)
    if not ok:
        raise value
    if value != received:
        raise ControlplaneError(
            f"the generator yielded {value} items, but {received} arrived: the stream lost some; call again"
        )


def _item_value(item):
    try:
        return cloudpickle.loads(item.payload)
    except Exception as e:  # unpickling raises anything the pickled classes do
        raise RemoteError(
            f"item {item.item_index} of task {item.task_id} cannot be unpickled here ({type(e).__name__}: {e}); "
            f"the modules its classes come from must be importable in this process"
        ) from None
