package main

// Reading the policies and bindings, defaulting them as the API server does
// when they are created, and compiling each policy once with upstream's own
// compiler (validating.CompilePolicy, the plugin's compilePolicy made
// callable by build.sh's one-line export, overlay/).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
)

// policySet is what the files hold: the policies in file order, each with
// its bindings and its compiled evaluator.
type policySet struct {
	hooks    []validating.PolicyHook
	bindings []string
}

func (s *policySet) policyNames() []string {
	names := make([]string, 0, len(s.hooks))
	for _, hook := range s.hooks {
		names = append(names, hook.Policy.Name)
	}
	return names
}

func (s *policySet) bindingNames() []string { return s.bindings }

// load reads every file; any problem is an error naming the file and
// document.
func load(files []string) (*policySet, error) {
	var policies []*admissionregistrationv1.ValidatingAdmissionPolicy
	var bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, file := range files {
		docs, err := documents(file)
		if err != nil {
			return nil, err
		}
		for i, doc := range docs {
			where := fmt.Sprintf("%s, document %d", file, i+1)
			var head metav1.TypeMeta
			if err := json.Unmarshal(doc, &head); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if head.APIVersion != admissionregistrationv1.SchemeGroupVersion.String() {
				return nil, fmt.Errorf("%s: apiVersion %q, not %s", where, head.APIVersion, admissionregistrationv1.SchemeGroupVersion)
			}
			switch head.Kind {
			case "ValidatingAdmissionPolicy":
				policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
				if err := strict(doc, policy); err != nil {
					return nil, fmt.Errorf("%s: %w", where, err)
				}
				defaultPolicy(policy)
				policies = append(policies, policy)
			case "ValidatingAdmissionPolicyBinding":
				binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
				if err := strict(doc, binding); err != nil {
					return nil, fmt.Errorf("%s: %w", where, err)
				}
				defaultBinding(binding)
				bindings = append(bindings, binding)
			default:
				return nil, fmt.Errorf("%s: kind %q: only ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding are read", where, head.Kind)
			}
		}
	}
	return assemble(policies, bindings)
}

// documents splits a YAML (or JSON) file into its documents, as JSON.
func documents(file string) ([][]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var docs [][]byte
	for {
		var doc json.RawMessage
		err := decoder.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s, document %d: %w", file, len(docs)+1, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 || string(bytes.TrimSpace(doc)) == "null" {
			continue
		}
		docs = append(docs, doc)
	}
}

// strict decodes doc into out, refusing a field out does not have (a typo
// in a policy must not be dropped silently).
func strict(doc []byte, out any) error {
	decoder := json.NewDecoder(bytes.NewReader(doc))
	decoder.DisallowUnknownFields()
	return decoder.Decode(out)
}

// defaultPolicy sets what the API server defaults when a policy is created
// (k8s.io/kubernetes pkg/apis/admissionregistration/v1/defaults.go:
// SetDefaults_ValidatingAdmissionPolicySpec, SetDefaults_MatchResources,
// SetDefaults_Rule); that package is not a library, so the four defaults
// are restated here.
func defaultPolicy(policy *admissionregistrationv1.ValidatingAdmissionPolicy) {
	if policy.Spec.FailurePolicy == nil {
		fail := admissionregistrationv1.Fail
		policy.Spec.FailurePolicy = &fail
	}
	if policy.Spec.MatchConstraints != nil {
		defaultMatchResources(policy.Spec.MatchConstraints)
	}
}

func defaultBinding(binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	if binding.Spec.MatchResources != nil {
		defaultMatchResources(binding.Spec.MatchResources)
	}
}

func defaultMatchResources(match *admissionregistrationv1.MatchResources) {
	if match.MatchPolicy == nil {
		equivalent := admissionregistrationv1.Equivalent
		match.MatchPolicy = &equivalent
	}
	if match.NamespaceSelector == nil {
		match.NamespaceSelector = &metav1.LabelSelector{}
	}
	if match.ObjectSelector == nil {
		match.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rules := range [][]admissionregistrationv1.NamedRuleWithOperations{match.ResourceRules, match.ExcludeResourceRules} {
		for i := range rules {
			if rules[i].Scope == nil {
				all := admissionregistrationv1.AllScopes
				rules[i].Scope = &all
			}
		}
	}
}

// assemble checks each policy and binding as the API server does when they
// are created (check.go), compiles each policy, and pairs the bindings with
// their policies; a binding naming no policy of the files is refused (the
// API server would keep it, inert, which a test would not notice).
func assemble(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) (*policySet, error) {
	set := &policySet{}
	index := map[string]int{}
	for _, policy := range policies {
		if policy.Name == "" {
			return nil, fmt.Errorf("a ValidatingAdmissionPolicy has no metadata.name")
		}
		if _, seen := index[policy.Name]; seen {
			return nil, fmt.Errorf("two ValidatingAdmissionPolicies named %q", policy.Name)
		}
		if policy.Spec.MatchConstraints == nil || len(policy.Spec.MatchConstraints.ResourceRules) == 0 {
			return nil, fmt.Errorf("ValidatingAdmissionPolicy %q: spec.matchConstraints.resourceRules is required", policy.Name)
		}
		if err := checkPolicy(policy); err != nil {
			return nil, err
		}
		evaluator := validating.CompilePolicy(policy)
		if err := evaluator.CompileError(); err != nil {
			return nil, fmt.Errorf("ValidatingAdmissionPolicy %q does not compile: %w", policy.Name, err)
		}
		index[policy.Name] = len(set.hooks)
		set.hooks = append(set.hooks, validating.PolicyHook{Policy: policy, Evaluator: evaluator})
	}
	for _, binding := range bindings {
		i, ok := index[binding.Spec.PolicyName]
		if !ok {
			return nil, fmt.Errorf("ValidatingAdmissionPolicyBinding %q names policy %q, which no file holds", binding.Name, binding.Spec.PolicyName)
		}
		if err := checkBinding(binding); err != nil {
			return nil, err
		}
		hook := &set.hooks[i]
		if kind := hook.Policy.Spec.ParamKind; kind != nil && !isNode(kind) {
			return nil, fmt.Errorf("ValidatingAdmissionPolicy %q: paramKind %s %s: this tool holds only Nodes (v1) as params", hook.Policy.Name, kind.APIVersion, kind.Kind)
		}
		hook.Bindings = append(hook.Bindings, binding)
		set.bindings = append(set.bindings, binding.Name)
	}
	return set, nil
}

func isNode(kind *admissionregistrationv1.ParamKind) bool {
	return kind.APIVersion == "v1" && kind.Kind == "Node"
}
