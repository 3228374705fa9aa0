// Pod templates of the workload kinds (apps/v1 Deployment and DaemonSet) and metav1.LabelSelector:
// the defaults kube-apiserver fills in (k8s.io/kubernetes pkg/apis/core/v1/defaults.go), the
// rules of pkg/apis/core/validation a manifest most often breaks, and selector matching and
// printing. Pure; not thread-safe on shared objects.
#pragma once

#include <string>

#include "apiserver/api_error.h"
#include "apiserver/json_util.h"

namespace pylon::apiserver {

// Defaults `tmpl` (a PodTemplateSpec: {metadata, spec}) in place and puts its keys in the order
// the real server serializes them.
void DefaultPodTemplate(Json& tmpl);

// Validates a defaulted PodTemplateSpec of a workload; `path` is its field path ("spec.template").
// Workload templates allow restartPolicy Always only.
FieldErrors ValidatePodTemplate(const Json& tmpl, const std::string& path);

// Whether a metav1.LabelSelector ({matchLabels, matchExpressions}) selects `labels` (an object of
// strings). An empty selector selects everything; a malformed one selects nothing.
bool SelectorMatches(const Json& selector, const Json& labels);

// Structural checks of a LabelSelector at `path` (operators, values per operator).
FieldErrors ValidateLabelSelector(const Json& selector, const std::string& path);

// metav1.FormatLabelSelector: "app=x,tier in (a,b),!gone"; "<none>" for an empty selector.
std::string FormatLabelSelector(const Json& selector);

}  // namespace pylon::apiserver
