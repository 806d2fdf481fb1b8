#!/usr/bin/env python3
"""Exits 0 when an S3 endpoint accepts the keys and has the bucket.

    AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=… s3-head-bucket.py http://127.0.0.1:8333 bucket [WAIT]

A SigV4-signed HEAD of the bucket (path style, region us-east-1), standard
library only, tried every 0.1 s for up to WAIT seconds (default: once).
Prints the last HTTP status or connection error, never a key.
"""
import datetime
import hashlib
import hmac
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def sign(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def head_bucket(endpoint: str, bucket: str) -> str:
    """"200" when the bucket answers, else what went wrong."""
    access, secret = os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]
    region, service = "us-east-1", "s3"
    host = urllib.parse.urlsplit(endpoint).netloc
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    empty = hashlib.sha256(b"").hexdigest()
    headers = {"host": host, "x-amz-content-sha256": empty, "x-amz-date": stamp}
    signed = ";".join(sorted(headers))
    canonical = "\n".join(
        ["HEAD", f"/{bucket}", ""]
        + [f"{k}:{headers[k]}" for k in sorted(headers)]
        + ["", signed, empty]
    )
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = sign(sign(sign(sign(f"AWS4{secret}".encode(), day), region), service), "aws4_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    request = urllib.request.Request(f"{endpoint}/{bucket}", method="HEAD")
    for k, v in headers.items():
        if k != "host":
            request.add_header(k, v)
    request.add_header(
        "Authorization",
        f"AWS4-HMAC-SHA256 Credential={access}/{scope}, SignedHeaders={signed}, Signature={signature}",
    )
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return str(response.status)
    except urllib.error.HTTPError as e:
        return str(e.code)
    except OSError as e:
        return str(getattr(e, "reason", e))


def main() -> int:
    endpoint, bucket = sys.argv[1].rstrip("/"), sys.argv[2]
    deadline = time.monotonic() + (float(sys.argv[3]) if len(sys.argv) > 3 else 0)
    while True:
        answer = head_bucket(endpoint, bucket)
        if answer == "200" or time.monotonic() >= deadline:
            print(answer)
            return 0 if answer == "200" else 1
        time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main())
