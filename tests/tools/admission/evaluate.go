package main

// The evaluation: upstream's dispatcher (validating.NewDispatcher, the one
// the API server's ValidatingAdmissionPolicy plugin runs) over the hooks of
// the files, with the request's Nodes in the param store a policy with
// paramKind Node lists (as the plugin's typed Node informer would hold
// them), and the request's namespace in the namespace lister.

import (
	"context"
	"errors"
	"net/http"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

type evaluator struct {
	set        *policySet
	dispatcher generic.Dispatcher[validating.PolicyHook]
	objects    admission.ObjectInterfaces
	nodes      cache.Indexer
	namespaces cache.Indexer
}

func newEvaluator(set *policySet) *evaluator {
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	e := &evaluator{
		set:        set,
		objects:    admission.NewObjectInterfacesFromScheme(scheme.Scheme),
		nodes:      cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers),
		namespaces: cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers),
	}
	// No client: every namespace a request names is in the lister.
	matcher := matching.NewMatcher(corelisters.NewNamespaceLister(e.namespaces), nil)
	e.dispatcher = validating.NewDispatcher(noOpinion{}, generic.NewPolicyMatcher(matcher))
	params := nodeParams{store: e.nodes}
	for i := range set.hooks {
		if set.hooks[i].Policy.Spec.ParamKind != nil {
			set.hooks[i].ParamInformer = params
			set.hooks[i].ParamScope = meta.RESTScopeRoot
		}
	}
	return e
}

// answer evaluates one input line.
func (e *evaluator) answer(line []byte) answer {
	req, err := parse(line)
	if err != nil {
		return refused("%v", err)
	}
	policies := make([]*admissionregistrationv1.ValidatingAdmissionPolicy, 0, len(e.set.hooks))
	for _, hook := range e.set.hooks {
		policies = append(policies, hook.Policy)
	}
	if err := unconverted(policies, req.attributes); err != nil {
		return refused("%v", err)
	}
	nodes := make([]any, 0, len(req.nodes))
	for _, node := range req.nodes {
		nodes = append(nodes, node)
	}
	if err := e.nodes.Replace(nodes, ""); err != nil {
		return refused("holding the nodes: %v", err)
	}
	var namespaces []any
	if name := req.attributes.GetNamespace(); name != "" {
		// As the API server labels every namespace.
		namespaces = append(namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{corev1.LabelMetadataName: name},
		}})
	}
	if err := e.namespaces.Replace(namespaces, ""); err != nil {
		return refused("holding the namespace: %v", err)
	}
	err = e.dispatcher.Dispatch(context.Background(), req.attributes, e.objects, e.set.hooks)
	return verdict(err)
}

// verdict is what the API server answers for the dispatcher's error: its
// status when it is one, else an internal error (500).
func verdict(err error) answer {
	if err == nil {
		return answer{Allowed: true}
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		return answer{Code: s.Code, Reason: string(s.Reason), Message: s.Message}
	}
	internal := apierrors.NewInternalError(err).ErrStatus
	return answer{Code: http.StatusInternalServerError, Reason: string(internal.Reason), Message: internal.Message}
}

// noOpinion is the authorizer the policies' `authorizer` variable asks: it
// has no opinion on anything (the policies here do not ask it).
type noOpinion struct{}

func (noOpinion) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionNoOpinion, "the admission tool has no authorizer", nil
}

// nodeParams is the param informer of a paramKind Node policy: its lister
// lists the request's Nodes; it is always synced.
type nodeParams struct {
	store cache.Indexer
}

func (p nodeParams) Informer() cache.SharedIndexInformer { return syncedInformer{} }

func (p nodeParams) Lister() cache.GenericLister {
	return cache.NewGenericLister(p.store, schema.GroupResource{Resource: "nodes"})
}

// syncedInformer answers HasSynced, the one call the dispatcher makes on a
// param informer (generic.CollectParams); any other call panics (nil
// embedded interface), which would show a new use at once.
type syncedInformer struct {
	cache.SharedIndexInformer
}

func (syncedInformer) HasSynced() bool { return true }
