"""Generated gRPC and protobuf code for the levers9.v1 API (scripts/gen-proto.sh).

Only the client imports these; they stay out of the SDK object shipped to
containers, which run without grpc and protobuf.
"""
