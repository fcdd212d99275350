{{/* Helm's own labels, on every object. */}}
{{- define "dra-apiserver.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The server's own objects: its name and the project's, as manifests/base labels them. */}}
{{- define "dra-apiserver.labels" -}}
app.kubernetes.io/name: dra-apiserver
app.kubernetes.io/part-of: dra-extension-apiserver
{{ include "dra-apiserver.helmLabels" . }}
{{- end }}

{{- define "dra-apiserver.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* The etcd members' client URLs, as the server's --storage names them. */}}
{{- define "dra-apiserver.etcdMembers" -}}
{{- $ns := .Values.namespace -}}
{{- range $i := until 3 }}{{ if $i }},{{ end }}dra-etcd-{{ $i }}.dra-etcd.{{ $ns }}.svc:2379{{ end }}
{{- end }}

{{- define "dra-apiserver.etcdPeers" -}}
{{- $ns := .Values.namespace -}}
{{- range $i := until 3 }}{{ if $i }},{{ end }}dra-etcd-{{ $i }}=http://dra-etcd-{{ $i }}.dra-etcd.{{ $ns }}.svc:2380{{ end }}
{{- end }}
