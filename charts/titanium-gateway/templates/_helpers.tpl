{{/* Names. Every object name the controller needs is derived here, once. */}}
{{- define "tg.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tg.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "tg.controllerName" -}}{{ include "tg.fullname" . | trunc 52 | trimSuffix "-" }}-controller{{- end -}}
{{- define "tg.controllerMetricsName" -}}{{ include "tg.controllerName" . }}-metrics{{- end -}}
{{- define "tg.dataPlaneName" -}}{{ include "tg.fullname" . | trunc 52 | trimSuffix "-" }}-data-plane{{- end -}}
{{- define "tg.configMapName" -}}{{ include "tg.dataPlaneName" . }}{{- end -}}
{{- define "tg.tlsSecretName" -}}{{ include "tg.dataPlaneName" . }}-tls{{- end -}}
{{- define "tg.leaseName" -}}{{ default (include "tg.fullname" .) .Values.controller.leaderElection.leaseName }}{{- end -}}
{{- define "tg.adminTokenSecretName" -}}{{ default (printf "%s-admin-token" .Release.Name) .Values.adminToken.existingSecret }}{{- end -}}
{{- define "tg.controllerServiceAccountName" -}}{{ default (include "tg.controllerName" .) .Values.controller.serviceAccount.name }}{{- end -}}
{{- define "tg.dataPlaneServiceAccountName" -}}{{ default (include "tg.dataPlaneName" .) .Values.dataPlane.serviceAccount.name }}{{- end -}}

{{/* The part ConfigMap names, one per line. */}}
{{- define "tg.partNames" -}}
{{- $cm := include "tg.configMapName" . -}}
{{- range $i := until (int .Values.dataPlane.configParts) }}
{{ printf "%s-part-%d" $cm (add1 $i) }}
{{- end -}}
{{- end -}}

{{/* The namespaces whose Secrets the controller reads, comma-separated (--secret-namespaces):
the release namespace and controller.secretNamespaces; "" with controller.secretsClusterWide
(every namespace). */}}
{{- define "tg.secretNamespaces" -}}
{{- $listed := .Values.controller.secretNamespaces | default list -}}
{{- if .Values.controller.secretsClusterWide -}}
{{- if $listed -}}
{{- fail "controller.secretsClusterWide reads Secrets in every namespace: leave controller.secretNamespaces empty, or set secretsClusterWide to false" -}}
{{- end -}}
{{- else -}}
{{- prepend $listed .Release.Namespace | uniq | join "," -}}
{{- end -}}
{{- end -}}

{{- define "tg.portMap" -}}
{{- $pairs := list -}}
{{- range .Values.dataPlane.ports -}}{{- $pairs = append $pairs (printf "%d=%d" (int .port) (int .containerPort)) -}}{{- end -}}
{{- join "," $pairs -}}
{{- end -}}

{{- define "tg.dataPlanePorts" -}}
{{- $ports := list -}}
{{- range .Values.dataPlane.ports -}}{{- $ports = append $ports (printf "%d" (int .containerPort)) -}}{{- end -}}
{{- join "," $ports -}}
{{- end -}}

{{- define "tg.image" -}}
{{- $tag := default $.chart.AppVersion .image.tag -}}
{{- if .image.digest -}}
{{- printf "%s@%s" .image.repository .image.digest -}}
{{- else -}}
{{- printf "%s:%s" .image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* Labels without app.kubernetes.io/instance (for objects that add a selector's labels). */}}
{{- define "tg.metaLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/part-of: titanium-gateway
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "tg.labels" -}}
{{ include "tg.metaLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The data-plane pods: the labels the controller and the data-plane Service rely on. */}}
{{- define "tg.dataPlaneSelector" -}}
app.kubernetes.io/name: titanium
app.kubernetes.io/component: data-plane
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tg.controllerSelector" -}}
app.kubernetes.io/name: titanium-gateway
app.kubernetes.io/component: controller
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The security context of every container (UID 1654, read-only root, no capabilities). */}}
{{- define "tg.containerSecurityContext" -}}
runAsUser: 1654
runAsGroup: 1654
runAsNonRoot: true
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
privileged: false
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "tg.podSecurityContext" -}}
runAsUser: 1654
runAsGroup: 1654
fsGroup: 1654
runAsNonRoot: true
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Checks that stop a render that could not work. */}}
{{- define "tg.validate" -}}
{{- if and (not .Values.controller.leaderElection.enabled) (gt (int .Values.controller.replicas) 1) -}}
{{- fail "controller.leaderElection.enabled=false needs controller.replicas=1: only one writer may run" -}}
{{- end -}}
{{- if lt (int .Values.dataPlane.configParts) 0 -}}
{{- fail "dataPlane.configParts must be 0 or more" -}}
{{- end -}}
{{- if not .Values.dataPlane.ports -}}
{{- fail "dataPlane.ports must list at least one port" -}}
{{- end -}}
{{- range .Values.dataPlane.ports -}}
{{- if or (not .name) (not .port) (not .containerPort) -}}
{{- fail "every dataPlane.ports entry needs name, port and containerPort" -}}
{{- end -}}
{{- if lt (int .containerPort) 1024 -}}
{{- fail (printf "dataPlane.ports %s: containerPort %d is privileged; the data plane runs as non-root (use 1024 or above)" .name (int .containerPort)) -}}
{{- end -}}
{{- if eq (int .containerPort) (int $.Values.dataPlane.adminPort) -}}
{{- fail (printf "dataPlane.ports %s: containerPort %d is the admin port" .name (int .containerPort)) -}}
{{- end -}}
{{- end -}}
{{- if not (has .Values.dataPlane.service.type (list "LoadBalancer" "ClusterIP" "NodePort")) -}}
{{- fail "dataPlane.service.type must be LoadBalancer, ClusterIP or NodePort" -}}
{{- end -}}
{{- end -}}
