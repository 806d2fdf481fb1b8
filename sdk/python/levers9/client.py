"""The gRPC connection to the controlplane's FunctionService.

Imported lazily (only when a function is called remotely): the runner in a
container imports `levers9` without grpc or protobuf installed.
"""

from __future__ import annotations

import threading
from typing import Dict, Iterable, Optional, Tuple

import grpc
import grpc.experimental

from .config import Target, resolve_target
from .errors import AuthError, ConfigError, ControlplaneError, ControlplaneUnavailable, Levers9Error
from .v1 import function_pb2, function_pb2_grpc, image_pb2_grpc

_MIB = 1024 * 1024
# Arguments, results and code objects travel as single messages.
MAX_MESSAGE_BYTES = 256 * _MIB
# Every unary call gets an answer or an error within this long.
UNARY_TIMEOUT_SECONDS = 30.0
# Uploading a code object of up to 100 MiB over a slow link.
PUT_OBJECT_TIMEOUT_SECONDS = 300.0

_CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    # A Run stream can be silent for as long as a function runs; pings keep
    # NATs and load balancers from dropping it and detect a dead peer.
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 20_000),
    ("grpc.keepalive_permit_without_calls", 0),
    ("grpc.http2.max_pings_without_data", 0),
    # Server-streaming calls (Call, WaitTask) read on the caller's thread
    # rather than grpc's channel spin thread, which a sequence of calls
    # would start anew for each one.
    (grpc.experimental.ChannelOptions.SingleThreadedUnaryStream, 1),
]


class Client:
    """One channel to one controlplane, with the token on every call."""

    def __init__(self, target: Target):
        self.target = target
        if target.tls:
            channel = grpc.secure_channel(target.address, _credentials(target), _CHANNEL_OPTIONS)
        else:
            channel = grpc.insecure_channel(target.address, _CHANNEL_OPTIONS)
        self._channel = channel
        self._stub = function_pb2_grpc.FunctionServiceStub(channel)
        self._images = image_pb2_grpc.ImageServiceStub(channel)
        # Stubs of other services, made on first use (call_service).
        self._stubs: Dict[type, object] = {}
        self._metadata = (("authorization", f"Bearer {target.token}"),)

    def call(self, method: str, request, timeout: float = UNARY_TIMEOUT_SECONDS):
        """A unary FunctionService call; gRPC errors become levers9 errors."""
        try:
            return getattr(self._stub, method)(request, timeout=timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise self.translate(e, method, timeout) from None

    def call_images(self, method: str, request, timeout: float = UNARY_TIMEOUT_SECONDS):
        """A unary ImageService call."""
        try:
            return getattr(self._images, method)(request, timeout=timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise self.translate(e, method, timeout) from None

    def service(self, stub_class):
        """A stub of another service (SecretService, VolumeService…) on this
        channel; pass `metadata` to its calls and `translate` its errors."""
        return stub_class(self._channel)

    @property
    def metadata(self):
        """The call metadata: the token."""
        return self._metadata

    def call_service(self, stub_class, method: str, request, timeout: float = UNARY_TIMEOUT_SECONDS):
        """A unary call on another service of the same controlplane, e.g. DictServiceStub."""
        stub = self._stubs.get(stub_class)
        if stub is None:
            stub = self._stubs.setdefault(stub_class, stub_class(self._channel))
        try:
            return getattr(stub, method)(request, timeout=timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise self.translate(e, method, timeout) from None

    def build_image(self, request):
        """Opens the BuildImage stream; no deadline, the controlplane's build timeout applies."""
        return self._images.BuildImage(request, metadata=self._metadata)

    def run(self, requests: Iterable):
        """Opens the bidirectional Run stream; no deadline, since functions run for long."""
        return self._stub.Run(iter(requests), metadata=self._metadata)

    def call_one(self, request):
        """Opens a Call: one input, its events back; no deadline, since functions run for long."""
        return self._stub.Call(request, metadata=self._metadata)

    def wait_task(self, task_id: str, timeout: Optional[float]):
        return self._stub.WaitTask(
            function_pb2.WaitTaskRequest(task_id=task_id), timeout=timeout, metadata=self._metadata
        )

    def translate(self, error: grpc.RpcError, method: str, timeout: Optional[float] = None) -> Levers9Error:
        """The levers9 error for a failed call, saying what to do about it."""
        code = error.code() if hasattr(error, "code") else None
        details = (error.details() if hasattr(error, "details") else None) or str(error)
        where = f"the controlplane at {self.target.address}"
        token = self.target.token_source or "the token"
        if code == grpc.StatusCode.UNAUTHENTICATED:
            return AuthError(
                f"{where} refused {token} ({details}): check the token, e.g. set LEVERS9_TOKEN "
                f"or save a new one with `levers9 config create NAME`"
            )
        if code == grpc.StatusCode.PERMISSION_DENIED:
            return AuthError(f"{token} is not allowed to call {method} ({details}): use a workspace token")
        if code == grpc.StatusCode.UNAVAILABLE:
            return ControlplaneUnavailable(
                f"cannot reach {where} ({details}): is it running (`levers9 up` starts a local one), "
                f"and are the host, port and TLS setting right?"
            )
        if code == grpc.StatusCode.DEADLINE_EXCEEDED and timeout is not None:
            return ControlplaneError(f"{method}: no answer from {where} within {timeout:g} s", code=code.name)
        name = code.name if code is not None else "UNKNOWN"
        return ControlplaneError(f"{method} failed: {name}: {details}", code=name)

    def close(self) -> None:
        self._channel.close()


def _credentials(target: Target) -> grpc.ChannelCredentials:
    """TLS credentials: grpc's own roots, or only the CA file when one is set."""
    if not target.ca_file:
        return grpc.ssl_channel_credentials()
    try:
        with open(target.ca_file, "rb") as f:
            roots = f.read()
    except OSError as e:
        raise ConfigError(
            f"cannot read the controlplane CA file {target.ca_file} ({e}): "
            f"fix LEVERS9_CONTROLPLANE_CA or the context's ca_file"
        ) from None
    if b"-----BEGIN CERTIFICATE-----" not in roots:
        raise ConfigError(f"the controlplane CA file {target.ca_file} holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
    return grpc.ssl_channel_credentials(root_certificates=roots)


_clients: Dict[Tuple[str, int, bool, str, Optional[str]], Client] = {}
_clients_lock = threading.Lock()


def get_client() -> Client:
    """The client for the controlplane configured now, one per target per process.

    The target is resolved on every call, so changing LEVERS9_TOKEN in a
    running process takes effect; the channel is reused while it stays the same.
    """
    target = resolve_target()
    key = (target.host, target.port, target.tls, target.token, target.ca_file)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = Client(target)
        return client
