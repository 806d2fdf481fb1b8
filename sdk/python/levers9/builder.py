"""``python3 -m levers9.builder``: runs inside a build container.

The controlplane starts the container from the image the build begins at
(the base image, or the longest prefix of the steps already built) and
passes the steps in ``LEVERS9_BUILD`` (JSON). For each step this program
snapshots the root file system, runs the step, snapshots again, and turns
the difference into one OCI layer: new and changed entries, and a
``.wh.NAME`` whiteout for each deleted one. After each step it pushes the
layer, a config and a manifest to the image registry, tagged with the id of
the spec made of the steps so far, so a later build that shares the prefix
starts from there.

Registry credentials, when the registries need any, come in
``LEVERS9_REGISTRY_AUTH`` (docker config JSON, only the hosts this build
talks to). The builder takes them out of its environment before anything
else: it re-executes itself with them on a pipe, so neither a step's
environment nor ``/proc/<pid>/environ`` shows them, and it never prints them.

Lines starting with ``::levers9`` are for the controlplane (progress, the
result, the failing step); everything else is the build log.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
import base64
import urllib.error
import urllib.parse
import urllib.request
from typing import Dict, List, Optional, Tuple

from . import debs

WORK_DIR = "/.levers9-build"
FILES_DIR = "/levers9/build/files"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
SPEC_LABEL = "dev.levers9.image.spec"
ACCEPT = ", ".join(
    [
        OCI_MANIFEST,
        "application/vnd.docker.distribution.manifest.v2+json",
    ]
)


class BuildError(Exception):
    """A step or a push failed; the message says which."""


def say(line: str) -> None:
    print(line, flush=True)


# ---------------------------------------------------------------- registry


AUTH_ENV = "LEVERS9_REGISTRY_AUTH"
AUTH_FD_ENV = "LEVERS9_REGISTRY_AUTH_FD"


def take_registry_auth() -> Dict[str, str]:
    """The ``Authorization`` header of each registry host in ``LEVERS9_REGISTRY_AUTH``.

    The first call re-executes this program with the credentials on a pipe
    and without the variable, so they are in no environment a step (or
    ``/proc``) can read; the re-executed program reads them from the pipe.
    """
    raw = os.environ.pop(AUTH_ENV, None)
    if raw is not None:
        r, w = os.pipe()
        os.write(w, raw.encode())
        os.close(w)
        os.set_inheritable(r, True)
        env = dict(os.environ)
        env[AUTH_FD_ENV] = str(r)
        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable, "-m", "levers9.builder"], env)
    fd = os.environ.pop(AUTH_FD_ENV, None)
    if fd is None:
        return {}
    with os.fdopen(int(fd), "rb") as f:
        config = json.loads(f.read().decode() or "{}")
    headers = {}
    for host, entry in (config.get("auths") or {}).items():
        host = host.split("://", 1)[-1].split("/", 1)[0].lower()
        if entry.get("registrytoken"):
            headers[host] = "Bearer " + entry["registrytoken"]
        elif entry.get("auth"):
            headers[host] = "Basic " + entry["auth"]
        elif entry.get("username") is not None and entry.get("password") is not None:
            pair = f"{entry['username']}:{entry['password']}".encode()
            headers[host] = "Basic " + base64.b64encode(pair).decode()
    return headers


def parse_challenge(value: str) -> Tuple[str, Dict[str, str]]:
    """(scheme, parameters) of a ``WWW-Authenticate`` value."""
    scheme, _, rest = value.strip().partition(" ")
    params = {}
    for part in rest.split(","):
        key, _, val = part.strip().partition("=")
        if key:
            params[key.lower()] = val.strip().strip('"')
    return scheme.lower(), params


class Registry:
    """The few calls of the OCI distribution API a build needs."""

    def __init__(self, host: str, credentials: Optional[str] = None):
        self.host = host
        loopback = host.startswith(("127.", "localhost", "[::1]"))
        self.base = ("http://" if loopback else "https://") + host
        # The Authorization header of the credentials, and the one that
        # answered the registry's last challenge (sent from then on).
        self.credentials = credentials
        self.answer: Optional[str] = None

    def answer_challenge(self, challenge: str) -> Optional[str]:
        scheme, params = parse_challenge(challenge)
        if scheme == "basic":
            return self.credentials if (self.credentials or "").startswith("Basic ") else None
        if scheme != "bearer" or "realm" not in params:
            return None
        if (self.credentials or "").startswith("Bearer "):
            return self.credentials
        query = {k: params[k] for k in ("service", "scope") if k in params}
        req = urllib.request.Request(params["realm"] + "?" + urllib.parse.urlencode(query))
        if self.credentials:
            req.add_unredirected_header("Authorization", self.credentials)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                answer = json.loads(r.read())
        except (OSError, ValueError) as e:
            raise BuildError(f"registry {self.host}: getting a token from {params['realm']} failed: {e}") from None
        token = answer.get("token") or answer.get("access_token")
        return f"Bearer {token}" if token else None

    def request(self, method: str, path: str, data: Optional[bytes] = None, headers=None):
        url = path if path.startswith("http") else self.base + path
        for attempt in (1, 2):
            req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
            if self.answer:
                # Not sent on to a redirect (blob storage signs its own URLs).
                req.add_unredirected_header("Authorization", self.answer)
            try:
                return urllib.request.urlopen(req, timeout=300)
            except urllib.error.HTTPError as e:
                if e.code == 401 and attempt == 1:
                    answer = self.answer_challenge(e.headers.get("WWW-Authenticate", ""))
                    if answer:
                        self.answer = answer
                        continue
                body = e.read()[:300].decode("utf-8", "replace")
                raise BuildError(f"registry {self.host}: {method} {path.split('?')[0]} answered {e.code}: {body}") from None
            except OSError as e:
                raise BuildError(f"registry {self.host}: {method} {path.split('?')[0]} failed: {e}") from None
        raise BuildError(f"registry {self.host}: {method} {path.split('?')[0]} was refused twice")

    def manifest(self, repo: str, reference: str) -> bytes:
        with self.request("GET", f"/v2/{repo}/manifests/{reference}", headers={"Accept": ACCEPT}) as r:
            return r.read()

    def blob(self, repo: str, digest: str) -> bytes:
        with self.request("GET", f"/v2/{repo}/blobs/{digest}") as r:
            return r.read()

    def has_blob(self, repo: str, digest: str) -> bool:
        try:
            with self.request("HEAD", f"/v2/{repo}/blobs/{digest}"):
                return True
        except BuildError:
            return False

    def mount(self, repo: str, digest: str, source_repo: str) -> bool:
        """Cross-repository mount; false when the registry wants an upload instead."""
        with self.request("POST", f"/v2/{repo}/blobs/uploads/?mount={digest}&from={source_repo}", data=b"") as r:
            return r.status == 201

    def push_blob(self, repo: str, digest: str, data: bytes) -> None:
        if self.has_blob(repo, digest):
            return
        with self.request("POST", f"/v2/{repo}/blobs/uploads/", data=b"") as r:
            location = r.headers["Location"]
        if not location.startswith("http"):
            location = self.base + location
        sep = "&" if "?" in location else "?"
        headers = {"Content-Type": "application/octet-stream", "Content-Length": str(len(data))}
        with self.request("PUT", f"{location}{sep}digest={digest}", data=data, headers=headers):
            pass

    def push_manifest(self, repo: str, tag: str, data: bytes) -> str:
        with self.request("PUT", f"/v2/{repo}/manifests/{tag}", data=data, headers={"Content-Type": OCI_MANIFEST}):
            pass
        return "sha256:" + hashlib.sha256(data).hexdigest()


def split_ref(ref: str) -> Tuple[str, str, str]:
    """(registry host, repository, digest) of ``host/repo@sha256:...``."""
    name, digest = ref.split("@", 1)
    host, repo = name.split("/", 1)
    return host, repo, digest


# ---------------------------------------------------------------- snapshots


def mount_points() -> List[str]:
    """Every mount point but /: bind mounts, /proc, /dev, ... are not the image."""
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = line.split()[4].encode().decode("unicode_escape")
            if point != "/":
                points.append(point)
    return points + [WORK_DIR]


Entry = Tuple[int, int, int, int, int, int, str]


def snapshot(skip: List[str]) -> Dict[str, Entry]:
    """Path (relative, no leading /) -> what tells a change: mode, owner, size, times, link."""
    found: Dict[str, Entry] = {}
    skipped = set(skip)
    stack = ["/"]
    while stack:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            path = entry.path
            if path in skipped:
                continue
            st = entry.stat(follow_symlinks=False)
            link = os.readlink(path) if stat.S_ISLNK(st.st_mode) else ""
            found[path[1:]] = (st.st_mode, st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns, st.st_ctime_ns, link)
            if stat.S_ISDIR(st.st_mode):
                stack.append(path)
    return found


def parents(path: str) -> List[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def write_layer(before: Dict[str, Entry], after: Dict[str, Entry], out) -> Tuple[int, int]:
    """Writes the tar of what changed to `out`; (entries added or changed, whiteouts)."""
    changed = {p for p, e in after.items() if before.get(p) != e}
    for p in list(changed):
        changed.update(parents(p))
    deleted = []
    for p in before:
        if p in after:
            continue
        parent = p.rsplit("/", 1)[0] if "/" in p else ""
        # Only the top of a deleted tree needs a whiteout, and only where
        # its parent is still a directory (a file over it hides it anyway).
        if parent == "" or (parent in after and stat.S_ISDIR(after[parent][0])):
            deleted.append(p)
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for p in sorted(changed):
            tar.add("/" + p, arcname=p, recursive=False)
        for p in sorted(deleted):
            head, _, name = p.rpartition("/")
            info = tarfile.TarInfo((head + "/" if head else "") + ".wh." + name)
            info.mtime = 0
            tar.addfile(info)
    return len(changed), len(deleted)


# ---------------------------------------------------------------- steps


def run_commands(argvs: List[List[str]], env: Dict[str, str]) -> None:
    for argv in argvs:
        say("$ " + " ".join(shlex.quote(a) for a in argv))
        try:
            code = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL).returncode
        except OSError as e:
            say(f"cannot run {argv[0]}: {e.strerror}")
            code = 127
        if code != 0:
            raise StepFailed(code)


class StepFailed(Exception):
    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def shell_argv(command: str, env: Dict[str, str]) -> List[str]:
    shell = "/bin/sh" if os.path.exists("/bin/sh") else shutil.which("sh", path=env.get("PATH"))
    if shell:
        return [shell, "-c", command]
    # An image without a shell: the command is split like a shell would,
    # without expansions.
    return shlex.split(command)


def run_step(step: dict, env: Dict[str, str]) -> None:
    kind = step["kind"]
    if kind == "pip":
        pip_env = dict(env)
        pip_env["PYTHONPATH"] = os.environ.get("LEVERS9_PIP_PATH", "")
        pip_env["PIP_NO_CACHE_DIR"] = "1"
        pip_env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        pip_env["PIP_ROOT_USER_ACTION"] = "ignore"
        # The image is ours to change: Debian's "externally managed" marker
        # is about the host's Python, not a container image.
        pip_env["PIP_BREAK_SYSTEM_PACKAGES"] = "1"
        run_commands([[sys.executable, "-m", "pip", "install", *step["packages"]]], pip_env)
    elif kind == "apt":
        try:
            debs.install(step["packages"], say)
        except debs.AptError as e:
            say(f"apt: {e}")
            raise StepFailed(1) from None
    elif kind == "run":
        run_commands([shell_argv(c, env) for c in step["commands"]], env)
    elif kind == "files":
        source = os.path.join(FILES_DIR, step["digest"].split(":", 1)[1])
        dest = step["dest"]
        say(f"copying files to {dest}")
        names = os.listdir(source)
        if names == [".levers9-file"] or (len(names) == 1 and os.path.isfile(os.path.join(source, names[0]))):
            os.makedirs(os.path.dirname(dest) or "/", exist_ok=True)
            shutil.copy2(os.path.join(source, names[0]), dest)
        else:
            shutil.copytree(source, dest, dirs_exist_ok=True)
    elif kind == "env":
        pass
    else:
        raise BuildError(f"unknown step kind {kind!r}")


def describe(step: dict) -> str:
    kind = step["kind"]
    if kind in ("pip", "apt"):
        return f"{kind} install " + " ".join(step["packages"])
    if kind == "run":
        return "run " + " && ".join(step["commands"])
    if kind == "env":
        return "env " + " ".join(f"{k}={v}" for k, v in sorted(step["env"].items()))
    return f"files {step['digest'][:19]} -> {step['dest']}"


# ---------------------------------------------------------------- the build


def config_env(config: dict) -> Dict[str, str]:
    env = {}
    for kv in config.get("config", {}).get("Env") or []:
        key, _, value = kv.partition("=")
        env[key] = value
    return env


def build(job: dict, auth: Optional[Dict[str, str]] = None) -> str:
    auth = auth or {}
    target = Registry(job["registry"], auth.get(job["registry"].lower()))
    repo = job["repository"]
    src_host, src_repo, start_digest = split_ref(job["start"])
    source = target if src_host == target.host else Registry(src_host, auth.get(src_host.lower()))
    manifest = json.loads(source.manifest(src_repo, start_digest))
    config = json.loads(source.blob(src_repo, manifest["config"]["digest"]))
    layers = [dict(mediaType=l["mediaType"], digest=l["digest"], size=l["size"]) for l in manifest["layers"]]
    # The layers below must be in the image's repository too.
    for layer in layers:
        if target.has_blob(repo, layer["digest"]):
            continue
        if source is target and target.mount(repo, layer["digest"], src_repo):
            continue
        target.push_blob(repo, layer["digest"], source.blob(src_repo, layer["digest"]))
    skip = mount_points()
    os.makedirs(WORK_DIR, exist_ok=True)
    steps = job["steps"]
    total = job["total"]
    digest = start_digest
    for index, step in enumerate(steps):
        number = total - len(steps) + index + 1
        spec = step["step"]
        say(f"::levers9 step {number}/{total} {describe(spec)}")
        env = dict(os.environ)
        env.update(config_env(config))
        for key in ("LEVERS9_BUILD", "LEVERS9_PIP_PATH", "PYTHONPATH"):
            env.pop(key, None)
        before = snapshot(skip)
        began = time.monotonic()
        try:
            run_step(spec, env)
        except StepFailed as e:
            say(f"::levers9 failed {number} {e.code}")
            sys.exit(1)
        after = snapshot(skip)
        config = copy.deepcopy(config)
        inner = config.setdefault("config", {})
        if spec["kind"] == "env":
            merged = config_env(config)
            merged.update(spec["env"])
            inner["Env"] = [f"{k}={v}" for k, v in merged.items()]
        history = {"created_by": f"levers9: {describe(spec)}"}
        with tempfile.TemporaryFile(dir=WORK_DIR) as tar_file:
            added, whiteouts = write_layer(before, after, tar_file)
            if added or whiteouts:
                tar_file.seek(0)
                raw = tar_file.read()
                blob = gzip.compress(raw, compresslevel=6, mtime=0)
                layer_digest = "sha256:" + hashlib.sha256(blob).hexdigest()
                target.push_blob(repo, layer_digest, blob)
                layers.append(dict(mediaType=OCI_LAYER, digest=layer_digest, size=len(blob)))
                config.setdefault("rootfs", {"type": "layers", "diff_ids": []})["diff_ids"].append(
                    "sha256:" + hashlib.sha256(raw).hexdigest()
                )
                say(f"layer {layer_digest[:19]}: {added} entries, {whiteouts} deleted, {len(blob)} bytes")
            else:
                history["empty_layer"] = True
        config.setdefault("history", []).append(history)
        inner.setdefault("Labels", {})
        inner["Labels"] = dict(inner["Labels"] or {}, **{SPEC_LABEL: step["spec"]})
        config["created"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        config_blob = json.dumps(config, separators=(",", ":")).encode()
        config_digest = "sha256:" + hashlib.sha256(config_blob).hexdigest()
        target.push_blob(repo, config_digest, config_blob)
        new_manifest = {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, "digest": config_digest, "size": len(config_blob)},
            "layers": layers,
        }
        digest = target.push_manifest(repo, step["id"], json.dumps(new_manifest, separators=(",", ":")).encode())
        say(f"step {number} done in {time.monotonic() - began:.1f}s: {repo}:{step['id'][:12]}")
    return digest


def main() -> int:
    auth = take_registry_auth()
    job = json.loads(os.environ["LEVERS9_BUILD"])
    try:
        digest = build(job, auth)
    except BuildError as e:
        say(f"::levers9 error {e}")
        return 1
    say(f"::levers9 image {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
