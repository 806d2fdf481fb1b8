# The runner base image: what functions run in when they name no image
# (imageService.runner.baseImage). Debian's Python 3.11 with its standard
# library; the SDK is mounted into each container, so the image needs
# nothing of levers9. Build from the repository root:
#   docker build -f docker/runner.Dockerfile -t REGISTRY/levers9/python:3.11 .

ARG BASE_IMAGE=debian:bookworm-slim

FROM ${BASE_IMAGE} AS rootfs
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 ca-certificates \
 && ln -sf python3 /usr/bin/python \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/* \
           /usr/share/doc/* /usr/share/man/* /usr/share/info/* /usr/share/locale/*

# One flat layer: the apt lists and docs deleted above are gone for good
# instead of hiding in a lower layer, and workers pull a single blob.
FROM scratch
COPY --from=rootfs / /
ENV PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1
CMD ["python3"]
