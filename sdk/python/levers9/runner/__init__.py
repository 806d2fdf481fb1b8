"""The function runner: ``python -m levers9.runner`` inside a function's container.

It imports the user's function, connects to the worker's container server
over a Unix socket (protocol in `levers9.wire`) and runs the inputs it is
sent. It needs only the standard library and cloudpickle, since it runs in
whatever image the function chose; nothing here may import grpc or protobuf.
"""
