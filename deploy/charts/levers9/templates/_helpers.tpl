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

{{/*
The config file. Pools and jobResourcesEnforced come from .Values.worker;
keys the operator did not use are left out, so a minimal install renders
only keys every controlplane release knows.
*/}}
{{- define "levers9.configFile" -}}
{{- $config := deepCopy (.Values.config | default dict) -}}
{{- $worker := get $config "worker" | default dict -}}
{{- $pools := dict -}}
{{- range $name, $pool := .Values.worker.pools -}}
{{- $rendered := dict "runtime" ($pool.runtime | default "runc") -}}
{{- with $pool.nodeSelector }}{{ $_ := set $rendered "nodeSelector" . }}{{ end -}}
{{- with $pool.tolerations }}{{ $_ := set $rendered "tolerations" . }}{{ end -}}
{{- with $pool.security }}{{ $_ := set $rendered "security" . }}{{ end -}}
{{- range $key := list "gpuType" "priority" "requiresPoolSelector" "resources" "provider" "scaling" }}{{ with index $pool $key }}{{ $_ := set $rendered $key . }}{{ end }}{{ end -}}
{{- if eq ($pool.provider | default "local") "kubernetes" -}}
{{- /* Worker Jobs in this cluster, with the controlplane's own service account and the worker Role (rbac.yaml). */ -}}
{{- $_ := set $rendered "kubernetes" (dict "namespace" (include "levers9.workerNamespace" $) "workerImage" (include "levers9.workerImage" $) "controlplaneAddress" (printf "%s:1993" (include "levers9.controlplane" $)) "workerTokenSecret" ($.Values.worker.tokenSecret | default "levers9-worker-token")) -}}
{{- end -}}
{{- $_ := set $pools $name $rendered -}}
{{- end -}}
{{- if $pools }}{{ $_ := set $worker "pools" $pools }}{{ end -}}
{{- if .Values.worker.jobResourcesEnforced }}{{ $_ := set $worker "jobResourcesEnforced" true }}{{ end -}}
{{- $_ := set $config "worker" $worker -}}
{{- toYaml $config -}}
{{- end -}}
