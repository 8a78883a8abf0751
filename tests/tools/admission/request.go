package main

// One admission request: its JSON form, the admission.Attributes the API
// server would build from it, and the answer.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes/scheme"
)

// request is one input line. Every field but subResource, namespace,
// object, oldObject, dryRun and the userInfo's uid, groups and extra is
// required; "nodes" too, as a list (maybe empty), so that a request never
// leaves out the Nodes a policy's params are read from by accident.
type request struct {
	Operation   string                       `json:"operation"`
	Resource    *metav1.GroupVersionResource `json:"resource"`
	SubResource string                       `json:"subResource"`
	Namespace   string                       `json:"namespace"`
	Name        string                       `json:"name"`
	Object      json.RawMessage              `json:"object"`
	OldObject   json.RawMessage              `json:"oldObject"`
	UserInfo    *userInfo                    `json:"userInfo"`
	Nodes       *[]json.RawMessage           `json:"nodes"`
	DryRun      bool                         `json:"dryRun"`
}

type userInfo struct {
	Username string              `json:"username"`
	UID      string              `json:"uid"`
	Groups   []string            `json:"groups"`
	Extra    map[string][]string `json:"extra"`
}

// answer is one output line.
type answer struct {
	Allowed bool   `json:"allowed"`
	Code    int32  `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

func refused(format string, args ...any) answer {
	return answer{Error: fmt.Sprintf(format, args...)}
}

// parsed is a request made into what admission reads.
type parsed struct {
	attributes admission.Attributes
	nodes      []*corev1.Node
}

func parse(line []byte) (*parsed, error) {
	var req request
	if err := strict(line, &req); err != nil {
		return nil, fmt.Errorf("not a request (operation, resource, subResource, namespace, name, object, oldObject, userInfo, nodes, dryRun): %w", err)
	}
	operation, options, err := operationOf(req.Operation)
	if err != nil {
		return nil, err
	}
	switch {
	case req.Resource == nil || req.Resource.Version == "" || req.Resource.Resource == "":
		return nil, fmt.Errorf("resource needs version and resource (group is empty for the core group)")
	case req.Name == "":
		return nil, fmt.Errorf("name is empty")
	case req.UserInfo == nil || req.UserInfo.Username == "":
		return nil, fmt.Errorf("userInfo.username is empty")
	case req.Nodes == nil:
		return nil, fmt.Errorf("nodes is missing: list every Node the cluster holds ([] for none)")
	}
	object, err := decodeObject(req.Object, "object")
	if err != nil {
		return nil, err
	}
	oldObject, err := decodeObject(req.OldObject, "oldObject")
	if err != nil {
		return nil, err
	}
	if err := objectsFit(operation, object, oldObject); err != nil {
		return nil, err
	}
	kindOf := object
	if kindOf == nil {
		kindOf = oldObject
	}
	nodes, err := decodeNodes(*req.Nodes)
	if err != nil {
		return nil, err
	}
	info := &user.DefaultInfo{
		Name:   req.UserInfo.Username,
		UID:    req.UserInfo.UID,
		Groups: req.UserInfo.Groups,
		Extra:  req.UserInfo.Extra,
	}
	resource := schema.GroupVersionResource(*req.Resource)
	attributes := admission.NewAttributesRecord(object, oldObject, kindOf.GetObjectKind().GroupVersionKind(),
		req.Namespace, req.Name, resource, req.SubResource, operation, options, req.DryRun, info)
	return &parsed{attributes: attributes, nodes: nodes}, nil
}

// operationOf gives the operation and the options object the API server
// hands admission with it (request.options in CEL).
func operationOf(name string) (admission.Operation, runtime.Object, error) {
	switch admission.Operation(name) {
	case admission.Create:
		return admission.Create, &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "CreateOptions"}}, nil
	case admission.Update:
		return admission.Update, &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "UpdateOptions"}}, nil
	case admission.Delete:
		return admission.Delete, &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "DeleteOptions"}}, nil
	}
	return "", nil, fmt.Errorf("operation %q: one of CREATE, UPDATE, DELETE (a PATCH, server-side apply included, reaches admission as UPDATE, or CREATE when it creates)", name)
}

func objectsFit(operation admission.Operation, object, oldObject runtime.Object) error {
	switch {
	case operation == admission.Create && (object == nil || oldObject != nil):
		return fmt.Errorf("a CREATE has an object and no oldObject")
	case operation == admission.Update && (object == nil || oldObject == nil):
		return fmt.Errorf("an UPDATE has both object and oldObject")
	case operation == admission.Delete && (object != nil || oldObject == nil):
		return fmt.Errorf("a DELETE has an oldObject and no object")
	case object != nil && oldObject != nil &&
		object.GetObjectKind().GroupVersionKind() != oldObject.GetObjectKind().GroupVersionKind():
		return fmt.Errorf("object is %v, oldObject %v", object.GetObjectKind().GroupVersionKind(), oldObject.GetObjectKind().GroupVersionKind())
	}
	return nil
}

// decodeObject reads one object: into its Go type where client-go's scheme
// knows its kind (as the API server holds built-in kinds; a field the type
// lacks is an error, not a silent drop), else as unstructured (a custom
// resource, as the API server holds it after pruning and defaulting).
func decodeObject(raw json.RawMessage, field string) (runtime.Object, error) {
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var head metav1.TypeMeta
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	gvk := head.GroupVersionKind()
	if gvk.Version == "" || gvk.Kind == "" {
		return nil, fmt.Errorf("%s needs apiVersion and kind", field)
	}
	if scheme.Scheme.Recognizes(gvk) {
		typed, err := scheme.Scheme.New(gvk)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		if err := strict(raw, typed); err != nil {
			return nil, fmt.Errorf("%s is not a %v: %w", field, gvk, err)
		}
		return typed, nil
	}
	object := &unstructured.Unstructured{}
	if err := object.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return object, nil
}

// decodeNodes reads the Nodes as the API server's shared informer holds
// them: typed, without apiVersion and kind (the dispatcher adds those from
// paramKind).
func decodeNodes(raws []json.RawMessage) ([]*corev1.Node, error) {
	nodes := make([]*corev1.Node, 0, len(raws))
	seen := map[string]bool{}
	for i, raw := range raws {
		node := &corev1.Node{}
		if err := strict(raw, node); err != nil {
			return nil, fmt.Errorf("nodes[%d] is not a Node: %w", i, err)
		}
		if node.Name == "" || seen[node.Name] {
			return nil, fmt.Errorf("nodes[%d] has no name, or the name of an earlier one", i)
		}
		seen[node.Name] = true
		node.TypeMeta = metav1.TypeMeta{}
		nodes = append(nodes, node)
	}
	return nodes, nil
}

// unconverted says why a request cannot be evaluated here: a policy's rule
// names its group and resource but not its version, so the API server
// (matchPolicy Equivalent) would convert the object to the rule's version,
// and this tool holds no conversions.
func unconverted(hooks []*admissionregistrationv1.ValidatingAdmissionPolicy, attributes admission.Attributes) error {
	resource := attributes.GetResource()
	name := resource.Resource
	if sub := attributes.GetSubresource(); sub != "" {
		name += "/" + sub
	}
	for _, policy := range hooks {
		match := policy.Spec.MatchConstraints
		if match.MatchPolicy == nil || *match.MatchPolicy != admissionregistrationv1.Equivalent {
			continue
		}
		for _, rule := range match.ResourceRules {
			if !matchesAny(rule.APIGroups, resource.Group) || !matchesAny(rule.Resources, name) {
				continue
			}
			if !matchesAny(rule.APIVersions, resource.Version) {
				return fmt.Errorf("policy %q matches %s in %s, not in %s: the API server would convert the object, this tool cannot; send it as %s",
					policy.Name, name, strings.Join(rule.APIVersions, ", "), resource.Version, strings.Join(rule.APIVersions, " or "))
			}
		}
	}
	return nil
}

func matchesAny(values []string, value string) bool {
	return slices.Contains(values, "*") || slices.Contains(values, value)
}
