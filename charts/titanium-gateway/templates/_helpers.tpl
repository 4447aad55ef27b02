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

{{- define "tg.perGateway" -}}{{ if eq .Values.dataPlane.mode "perGateway" }}true{{ end }}{{- end -}}
{{- define "tg.dataPlaneTemplateName" -}}{{ include "tg.dataPlaneName" . }}-template{{- end -}}
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

{{/* Whether the controller reads Secrets and ConfigMaps in every namespace ("true" or ""):
controller.secretsClusterWide when set, else when no namespaces are listed (neither
controller.secretNamespaces nor dataPlane.gatewayNamespaces: the release serves every namespace). */}}
{{- define "tg.secretsClusterWide" -}}
{{- $c := .Values.controller -}}
{{- if kindIs "bool" $c.secretsClusterWide -}}
{{- if $c.secretsClusterWide }}true{{ end -}}
{{- else if not (or $c.secretNamespaces .Values.dataPlane.gatewayNamespaces) -}}
true
{{- end -}}
{{- end -}}

{{/* The namespaces whose Secrets and ConfigMaps the controller reads, comma-separated
(--secret-namespaces): the release namespace, dataPlane.gatewayNamespaces (a Gateway's
certificate in its own namespace) and controller.secretNamespaces; "" when it reads them in
every namespace (tg.secretsClusterWide). */}}
{{- define "tg.secretNamespaces" -}}
{{- $listed := concat (.Values.controller.secretNamespaces | default list) (.Values.dataPlane.gatewayNamespaces | default list) -}}
{{- if include "tg.secretsClusterWide" . -}}
{{- if $listed -}}
{{- fail "controller.secretsClusterWide reads Secrets in every namespace: leave controller.secretNamespaces and dataPlane.gatewayNamespaces empty, or set secretsClusterWide to false" -}}
{{- end -}}
{{- else -}}
{{- prepend ($listed | sortAlpha) .Release.Namespace | uniq | join "," -}}
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
{{- if and (gt (int .Values.dataPlane.preStopSleepSeconds) 0) (ge (int .Values.dataPlane.preStopSleepSeconds) (int .Values.dataPlane.terminationGracePeriodSeconds)) -}}
{{- fail "dataPlane.preStopSleepSeconds must be below dataPlane.terminationGracePeriodSeconds (the drain after SIGTERM needs time too)" -}}
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
{{- if not (has .Values.dataPlane.mode (list "perGateway" "shared")) -}}
{{- fail "dataPlane.mode must be perGateway or shared" -}}
{{- end -}}
{{- if and .Values.dataPlane.gatewayNamespaces (ne .Values.dataPlane.mode "perGateway") -}}
{{- fail "dataPlane.gatewayNamespaces is for dataPlane.mode=perGateway" -}}
{{- end -}}
{{- if and (include "tg.perGateway" .) .Values.controller.secretNamespaces (not .Values.dataPlane.gatewayNamespaces) -}}
{{- fail "controller.secretNamespaces with dataPlane.mode=perGateway: list dataPlane.gatewayNamespaces too (the namespaces this release serves), or the Secret reads would be namespaced while the data-plane writes stay cluster-wide" -}}
{{- end -}}
{{- if .Values.admissionPolicy.enabled -}}
{{- if and (.Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration") (not (.Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy")) -}}
{{- fail "admissionPolicy.enabled: this API server does not serve admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (Kubernetes 1.30+, not disabled by --runtime-config). The policy fences the controller's writes (docs/security.md): enable it, or set admissionPolicy.enabled=false and list dataPlane.gatewayNamespaces (namespaced Roles only)" -}}
{{- end -}}
{{- else if and (include "tg.perGateway" .) (not .Values.dataPlane.gatewayNamespaces) -}}
{{- fail "admissionPolicy.enabled=false with dataPlane.mode=perGateway writes Secrets, ConfigMaps, Services and Deployments in every namespace unfenced: list dataPlane.gatewayNamespaces (namespaced Roles only), or keep the policy (Kubernetes 1.30+)" -}}
{{- end -}}
{{- end -}}

{{/* The data-plane pod spec: the shared data plane's Deployment and, in the data-plane template
(dataPlane.mode=perGateway), the one the controller gives each Gateway's own (it replaces the
config volume's sources and the admin token's Secret with that data plane's, and uses the
namespace's default ServiceAccount, whose token is never mounted). */}}
{{- define "tg.dataPlanePodSpec" -}}
{{- $d := .Values.dataPlane -}}
serviceAccountName: {{ include "tg.dataPlaneServiceAccountName" . }}
automountServiceAccountToken: false
enableServiceLinks: false
terminationGracePeriodSeconds: {{ int $d.terminationGracePeriodSeconds }}
securityContext:
  {{- include "tg.podSecurityContext" . | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $d.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
containers:
  - name: titanium
    image: {{ include "tg.image" (dict "image" $d.image "chart" .Chart) | quote }}
    imagePullPolicy: {{ $d.image.pullPolicy }}
    command: ["titanium", "run", "--config", "/etc/titanium/twp.yaml", "--watch"]
    {{- with $d.extraArgs }}
    args:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    env:
      - name: TITANIUM_ADMIN_TOKEN
        valueFrom:
          secretKeyRef:
            name: {{ include "tg.adminTokenSecretName" . }}
            key: token
      {{- with $d.extraEnv }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    ports:
      {{- range $d.ports }}
      - name: {{ .name }}
        containerPort: {{ int .containerPort }}
        protocol: TCP
      {{- end }}
      - name: admin
        containerPort: {{ int $d.adminPort }}
        protocol: TCP
    # Ready once a config is loaded (the admin /readyz answers 200).
    readinessProbe:
      httpGet:
        path: /readyz
        port: admin
      initialDelaySeconds: 2
      periodSeconds: 5
      timeoutSeconds: 3
      failureThreshold: 3
    # Alive while the admin listener accepts connections: /readyz is 503 until the
    # leader writes the first config, which must not restart the pod.
    livenessProbe:
      tcpSocket:
        port: admin
      initialDelaySeconds: 10
      periodSeconds: 10
      timeoutSeconds: 3
      failureThreshold: 3
    {{- if gt (int $d.preStopSleepSeconds) 0 }}
    # Keeps serving after the deletion begins, until load balancers have taken the pod out.
    lifecycle:
      preStop:
        sleep:
          seconds: {{ int $d.preStopSleepSeconds }}
    {{- end }}
    resources:
      {{- toYaml $d.resources | nindent 6 }}
    securityContext:
      {{- include "tg.containerSecurityContext" . | nindent 6 }}
    volumeMounts:
      - name: config
        mountPath: /etc/titanium
        readOnly: true
      - name: tmp
        mountPath: /tmp
volumes:
  # One directory: twp.yaml, twp.part-<n>.yaml and the converted certificates.
  - name: config
    projected:
      defaultMode: 0444
      sources:
        - configMap:
            name: {{ include "tg.configMapName" . }}
        {{- range $part := (include "tg.partNames" . | trim | splitList "\n") }}
        {{- if $part }}
        - configMap:
            name: {{ $part }}
            optional: true
        {{- end }}
        {{- end }}
        - secret:
            name: {{ include "tg.tlsSecretName" . }}
  - name: tmp
    emptyDir:
      sizeLimit: {{ $d.tmpSizeLimit }}
{{- with $d.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $d.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $d.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $d.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The settings of the data planes the controller creates for Gateways (dataPlane.mode=
perGateway): the file of --data-plane-template (titanium_gateway/writers/plane_objects.py). */}}
{{- define "tg.dataPlaneTemplate" -}}
{{- $d := .Values.dataPlane -}}
replicas: {{ int $d.replicas }}
configParts: {{ int $d.configParts }}
ports:
  {{- range $d.ports }}
  - {name: {{ .name | quote }}, port: {{ int .port }}, containerPort: {{ int .containerPort }}}
  {{- end }}
service:
  type: {{ $d.service.type }}
  annotations:
    {{- toYaml ($d.service.annotations | default dict) | nindent 4 }}
  loadBalancerClass: {{ $d.service.loadBalancerClass | quote }}
  externalTrafficPolicy: {{ $d.service.externalTrafficPolicy | quote }}
labels:
  app.kubernetes.io/part-of: titanium-gateway
  app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
  {{- with .Values.commonLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
pod:
  metadata:
    labels:
      app.kubernetes.io/part-of: titanium-gateway
      {{- with .Values.commonLabels }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
      {{- with $d.podLabels }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    annotations:
      {{- toYaml ($d.podAnnotations | default dict) | nindent 6 }}
  spec:
    {{- include "tg.dataPlanePodSpec" . | nindent 4 }}
{{- end -}}
