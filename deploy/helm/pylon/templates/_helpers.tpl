{{/* The image of both components: repository:tag. */}}
{{- define "pylon.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}
