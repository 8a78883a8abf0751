// Command admission answers admission requests with Kubernetes' own
// ValidatingAdmissionPolicy code (k8s.io/apiserver's
// admission/plugin/policy/validating: its compiler, validator and
// dispatcher, and the CEL libraries the API server runs), so a test can ask
// what the API server would answer to a write, given the policies and
// bindings a cluster holds.
//
//	admission FILE...
//
// Each FILE is YAML (or JSON) holding ValidatingAdmissionPolicies and
// ValidatingAdmissionPolicyBindings of admissionregistration.k8s.io/v1,
// several documents a file; any other kind, an unknown field, a policy
// whose CEL does not compile or a binding naming no policy exits 2 with the
// reason on stderr. The fields the API server defaults when a policy is
// created are defaulted the same way (defaults.go). Then one line on stdout
// says it is ready:
//
//	{"ready": true, "policies": [names], "bindings": [names], "go": "go1.26.x", "apiserver": "<Debian version>"}
//
// and each line on stdin is one admission request, answered by one line on
// stdout (request.go has the fields):
//
//	{"operation": "UPDATE", "resource": {"group", "version", "resource"},
//	 "subResource": "status", "namespace": "ns", "name": "x",
//	 "object": {...}, "oldObject": {...},
//	 "userInfo": {"username", "uid", "groups", "extra"},
//	 "nodes": [core/v1 Node]}
//
//	{"allowed": true}
//	{"allowed": false, "code": 403, "reason": "Forbidden", "message": "..."}
//	{"error": "..."}
//
// "allowed": false is the API server's refusal: the HTTP status code,
// metav1.Status reason and message it answers. "error" is a request the
// tool cannot evaluate (bad JSON, a field it does not know, a kind it cannot
// decode, a version the API server would have converted); the tool answers
// the next line as usual. End of input ends it (exit 0).
//
// The request's objects are what the API server hands admission: for an
// UPDATE (a PUT, or any PATCH, server-side apply included) the object after
// the patch is applied and, on a status subresource, after the status
// strategy has put the stored object's spec and metadata back; for a DELETE
// only oldObject. "nodes" is every Node the cluster holds (maybe none), the
// objects a policy with paramKind Node is evaluated against.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
)

// Set at build time (tests/tools/admission/build.sh): the Debian version of
// golang-k8s-apiserver-dev the binary is built from.
var apiserverVersion = "unknown"

type ready struct {
	Ready     bool     `json:"ready"`
	Policies  []string `json:"policies"`
	Bindings  []string `json:"bindings"`
	Go        string   `json:"go"`
	Apiserver string   `json:"apiserver"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: admission FILE... (ValidatingAdmissionPolicies and their bindings, YAML)")
		os.Exit(2)
	}
	set, err := load(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "admission: %v\n", err)
		os.Exit(2)
	}
	evaluator := newEvaluator(set)
	out := bufio.NewWriter(os.Stdout)
	write(out, ready{true, set.policyNames(), set.bindingNames(), runtime.Version(), apiserverVersion})
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 && !blank(line) {
			write(out, evaluator.answer(line))
		}
		if err != nil {
			// End of input (or a broken pipe): done.
			return
		}
	}
}

func blank(line []byte) bool {
	for _, b := range line {
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			return false
		}
	}
	return true
}

func write(out *bufio.Writer, v any) {
	data, err := json.Marshal(v)
	if err == nil {
		data = append(data, '\n')
		_, err = out.Write(data)
	}
	if err == nil {
		err = out.Flush()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "admission: writing the answer: %v\n", err)
		os.Exit(1)
	}
}
