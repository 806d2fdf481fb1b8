{{/* Names and labels shared by every template. */}}

{{- define "levers9.fullname" -}}
{{- .Values.fullname | default "levers9" | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{- define "levers9.controlplane" -}}
{{- include "levers9.fullname" . }}-controlplane
{{- end -}}

{{- define "levers9.workerNamespace" -}}
{{- .Values.worker.namespace | default .Release.Namespace -}}
{{- end -}}

{{- define "levers9.labels" -}}
app.kubernetes.io/name: levers9
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "levers9.controlplaneSelector" -}}
app.kubernetes.io/name: levers9
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controlplane
{{- end -}}

{{/*
The chart has no default registry. Every template that needs one calls this,
so a render without them fails with the name of the value to set.
*/}}
{{- define "levers9.requireRegistries" -}}
{{- $missing := list -}}
{{- if not .Values.images.controlplane.repository -}}
{{- $missing = append $missing "images.controlplane.repository" -}}
{{- end -}}
{{- if not (.Values.config.worker | default dict).imageRegistry -}}
{{- $missing = append $missing "config.worker.imageRegistry" -}}
{{- end -}}
{{- if not (((.Values.config.imageService | default dict).runner | default dict).baseImageRegistry) -}}
{{- $missing = append $missing "config.imageService.runner.baseImageRegistry" -}}
{{- end -}}
{{- if $missing -}}
{{- fail (printf "the chart has no default registry: set %s to your own" (join ", " $missing)) -}}
{{- end -}}
{{- end -}}

{{- define "levers9.controlplaneImage" -}}
{{- printf "%s:%s" .Values.images.controlplane.repository (.Values.images.controlplane.tag | toString) -}}
{{- end -}}

{{- define "levers9.workerImage" -}}
{{- $repo := .Values.images.worker.repository -}}
{{- if not $repo -}}
{{- $parent := dir .Values.images.controlplane.repository -}}
{{- $repo = ternary "worker" (printf "%s/worker" $parent) (eq $parent ".") -}}
{{- end -}}
{{- printf "%s:%s" $repo (.Values.images.worker.tag | toString) -}}
{{- end -}}

{{/* Whether the controlplane has Redis: in the release, or configured. */}}
{{- define "levers9.hasRedis" -}}
{{- if or .Values.redis.enabled (((.Values.config.database | default dict).redis | default dict).addrs) }}true{{ end -}}
{{- end -}}

{{- define "levers9.databaseSecret" -}}
{{- include "levers9.fullname" . }}-database
{{- end -}}

{{- define "levers9.workerJuicefsSecret" -}}
{{- include "levers9.fullname" . }}-worker-juicefs
{{- end -}}

{{/* Whether volumes live in JuiceFS (config.storage.juicefs.metaUrl). */}}
{{- define "levers9.juicefsMetaUrl" -}}
{{- (((.Values.config | default dict).storage | default dict).juicefs | default dict).metaUrl | default "" -}}
{{- end -}}

{{/*
One pool of .Values.worker.pools as config keys. Keys the operator did not
use are left out. A provider: kubernetes pool gets the `kubernetes` keys of
worker Jobs in this cluster (the worker namespace, the worker image, the
controlplane's Service, the worker token Secret, the pull secrets of
images.pullSecrets, worker.registryCredentialsSecret and, while volumes
live in JuiceFS, the chart's worker JuiceFS Secret), under any the pool sets
itself (apiServer, tokenFile, caCertFile, controlplaneAddress… of a remote
cluster, docs/gke.md).
*/}}
{{- define "levers9.pool" -}}
{{- $name := index . 0 -}}
{{- $pool := index . 1 | default dict -}}
{{- $root := index . 2 -}}
{{- $rendered := dict "runtime" ($pool.runtime | default "runc") -}}
{{- range $key := list "nodeSelector" "tolerations" "security" "containerServerAuth" "gpuType" "priority" "requiresPoolSelector" "resources" "provider" "scaling" }}{{ with index $pool $key }}{{ $_ := set $rendered $key . }}{{ end }}{{ end -}}
{{- if eq ($pool.provider | default "local") "kubernetes" -}}
{{- $cluster := dict "namespace" (include "levers9.workerNamespace" $root) "workerImage" (include "levers9.workerImage" $root) "controlplaneAddress" (printf "%s:1993" (include "levers9.controlplane" $root)) "workerTokenSecret" ($root.Values.worker.tokenSecret | default "levers9-worker-token") -}}
{{- with $root.Values.images.pullSecrets }}{{ $names := list }}{{ range . }}{{ $names = append $names .name }}{{ end }}{{ $_ := set $cluster "imagePullSecrets" $names }}{{ end -}}
{{- with $root.Values.worker.registryCredentialsSecret }}{{ $_ := set $cluster "registryCredentialsSecret" . }}{{ end -}}
{{- if include "levers9.juicefsMetaUrl" $root }}{{ $_ := set $cluster "juicefsSecret" (include "levers9.workerJuicefsSecret" $root) }}{{ end -}}
{{- $_ := set $rendered "kubernetes" (merge (deepCopy ($pool.kubernetes | default dict)) $cluster) -}}
{{- else if $pool.kubernetes -}}
{{- fail (printf "worker.pools.%s.kubernetes is set but its provider is %q: set worker.pools.%s.provider: kubernetes, or drop the kubernetes keys" $name ($pool.provider | default "local") $name) -}}
{{- end -}}
{{- toYaml $rendered -}}
{{- end -}}

{{/*
The config file: .Values.config, with the pools of .Values.worker.pools
added to config.worker.pools (a name in both refuses to render, rather than
one silently replacing the other), worker.jobResourcesEnforced, and the
in-release Postgres and Redis when enabled (their passwords come from the
environment, never from this file).
*/}}
{{- define "levers9.configFile" -}}
{{- $config := deepCopy (.Values.config | default dict) -}}
{{- $worker := get $config "worker" | default dict -}}
{{- $pools := get $worker "pools" | default dict -}}
{{- range $name, $pool := .Values.worker.pools -}}
{{- if $pool -}}
{{- if hasKey $pools $name -}}
{{- fail (printf "pool %s is in both worker.pools and config.worker.pools: keep it in one of them" $name) -}}
{{- end -}}
{{- $_ := set $pools $name (include "levers9.pool" (list $name $pool $) | fromYaml) -}}
{{- end -}}
{{- end -}}
{{- if $pools }}{{ $_ := set $worker "pools" $pools }}{{ end -}}
{{- if .Values.worker.jobResourcesEnforced }}{{ $_ := set $worker "jobResourcesEnforced" true }}{{ end -}}
{{- $_ := set $config "worker" $worker -}}
{{- $database := get $config "database" | default dict -}}
{{- if .Values.postgres.enabled -}}
{{- $postgres := get $database "postgres" | default dict -}}
{{- if $postgres.host -}}
{{- fail "postgres.enabled runs Postgres in the release, but config.database.postgres.host is set too: use one of them" -}}
{{- end -}}
{{- $_ := set $postgres "host" (printf "%s-postgres" (include "levers9.fullname" .)) -}}
{{- $_ := set $postgres "port" 5432 -}}
{{- $_ := set $postgres "name" "levers9" -}}
{{- $_ := set $postgres "user" "levers9" -}}
{{- $_ := set $postgres "sslMode" "disable" -}}
{{- $_ := set $database "postgres" $postgres -}}
{{- end -}}
{{- if .Values.redis.enabled -}}
{{- $redis := get $database "redis" | default dict -}}
{{- if $redis.addrs -}}
{{- fail "redis.enabled runs Redis in the release, but config.database.redis.addrs is set too: use one of them" -}}
{{- end -}}
{{- $_ := set $redis "addrs" (list (printf "%s-redis:6379" (include "levers9.fullname" .))) -}}
{{- $_ := set $database "redis" $redis -}}
{{- end -}}
{{- if $database }}{{ $_ := set $config "database" $database }}{{ end -}}
{{- toYaml $config -}}
{{- end -}}
