// Command allocator answers one scheduling question with Kubernetes' own
// structured allocator (k8s.io/dynamic-resource-allocation/structured,
// vendored in third_party/dynamic-resource-allocation): may these claims of
// one pod be allocated on this node, given these ResourceSlices,
// DeviceClasses and the claims already allocated, and if so, with which
// devices? It calls structured.NewAllocator and Allocate as kube-scheduler's
// dynamicresources plugin does in PreFilter and Filter (state.go).
//
// Input on stdin, one JSON object (unknown fields are refused, so a field
// the allocator would not read is an error, not a silent drop):
//
//	{"node": Node, "features": {"PartitionableDevices": true, ...},
//	 "slices": [ResourceSlice], "classes": [DeviceClass],
//	 "claims": [ResourceClaim to allocate], "allocated": [ResourceClaim]}
//
// The objects are resource.k8s.io/v1 and core/v1 as the API serves them;
// "features" takes the fields of structured.Features by name (-about lists
// them). Output on stdout, one JSON object:
//
//	{"outcome": "allocated", "allocator": "incubating",
//	 "allocations": [{"claim": "ns/name", "allocation": AllocationResult}]}
//	{"outcome": "unschedulable", "stage": "prefilter" | "filter", "reason": "..."}
//	{"outcome": "error", "reason": "..."}
//	{"outcome": "limit", "calls": N, "reason": "..."}
//
// "unschedulable" is what the scheduler reports as the node not fitting the
// pod; "error" what it reports as a scheduling error (a bad CEL selector, an
// allocator that cannot be built); "limit" that the search needed more
// allocateOne calls than the input's optional "maxAllocateOneCalls" (where
// the scheduler would run into its filter timeout and call the node
// unschedulable; a count, so the answer does not depend on the machine). Input that is not such an object exits 2
// with the reason on stderr. -about prints the upstream version, the Go
// version, the Features fields and the fixes the binary was built with
// (build.sh FIX...: patches of tests/tools/allocator/fixes/, none by
// default).
//
// -stream answers many questions in one process, as a test that asks one
// per pod wants: input objects one after another on stdin (whitespace
// between them), one answer line on stdout for each, written as soon as
// the object is read; the CEL cache is kept across them, as the
// scheduler keeps its one. End of input ends it (exit 0); input that is not
// such an object exits 2 as above, after the answers to the objects before
// it (objects counted from 1).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"
)

// Set at build time (tests/tools/allocator/build.sh) from the vendored
// folder's SOURCE.
var (
	upstreamRef    = "unknown"
	upstreamCommit = "unknown"
	// Comma-separated names of the patches of fixes/ applied.
	appliedFixes = ""
)

type input struct {
	Node      v1.Node                      `json:"node"`
	Features  structured.Features          `json:"features"`
	Slices    []*resourceapi.ResourceSlice `json:"slices"`
	Classes   []*resourceapi.DeviceClass   `json:"classes"`
	Claims    []*resourceapi.ResourceClaim `json:"claims"`
	Allocated []*resourceapi.ResourceClaim `json:"allocated"`
	// A budget of allocateOne calls (0: none), standing in for the
	// scheduler's filter timeout without depending on time.
	MaxAllocateOneCalls int64 `json:"maxAllocateOneCalls,omitempty"`
}

type answer struct {
	Outcome     string            `json:"outcome"`
	Allocator   string            `json:"allocator,omitempty"`
	Allocations []claimAllocation `json:"allocations,omitempty"`
	Stage       string            `json:"stage,omitempty"`
	Reason      string            `json:"reason,omitempty"`
	Calls       int64             `json:"calls,omitempty"`
}

type claimAllocation struct {
	Claim      string                       `json:"claim"`
	Allocation resourceapi.AllocationResult `json:"allocation"`
}

type about struct {
	Upstream string   `json:"upstream"`
	Commit   string   `json:"commit"`
	Go       string   `json:"go"`
	Features []string `json:"features"`
	Fixes    []string `json:"fixes"`
}

func main() {
	showAbout := flag.Bool("about", false, "print the upstream version, Go version, Features fields and fixes, then exit")
	stream := flag.Bool("stream", false, "answer input objects one after another until end of input, one answer line each")
	flag.Parse()
	if *showAbout {
		write(about{upstreamRef, upstreamCommit, runtime.Version(), featureNames(), fixNames()})
		return
	}
	caches := newCelCaches()
	if *stream {
		dec := json.NewDecoder(os.Stdin)
		dec.DisallowUnknownFields()
		for n := 1; ; n++ {
			in, err := next(dec)
			if err == io.EOF {
				return
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "allocator: input object %d: %v\n", n, err)
				os.Exit(2)
			}
			write(schedule(in, caches))
		}
	}
	in, err := read(os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "allocator: %v\n", err)
		os.Exit(2)
	}
	write(schedule(in, caches))
}

// next decodes the next object of a stream; io.EOF at its end.
func next(dec *json.Decoder) (*input, error) {
	var in input
	if err := dec.Decode(&in); err != nil {
		if err == io.EOF {
			return nil, err
		}
		return nil, fmt.Errorf("not the input object (node, features, slices, classes, claims, allocated): %w", err)
	}
	return &in, in.check()
}

func read(r io.Reader) (*input, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading stdin: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var in input
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("stdin is not the input object (node, features, slices, classes, claims, allocated): %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("stdin holds more than one JSON value")
	}
	return &in, in.check()
}

// check refuses what the scheduler would never hand the allocator.
func (in *input) check() error {
	if in.Node.Name == "" {
		return fmt.Errorf("node.metadata.name is empty")
	}
	for i, claim := range in.Claims {
		if claim == nil || claim.Status.Allocation != nil {
			return fmt.Errorf("claims[%d] is null or already allocated: put allocated claims into \"allocated\"", i)
		}
	}
	for i, claim := range in.Allocated {
		if claim == nil || claim.Status.Allocation == nil {
			return fmt.Errorf("allocated[%d] is null or has no status.allocation", i)
		}
	}
	for i, slice := range in.Slices {
		if slice == nil {
			return fmt.Errorf("slices[%d] is null", i)
		}
	}
	seen := make(map[string]bool, len(in.Classes))
	for i, class := range in.Classes {
		if class == nil || class.Name == "" {
			return fmt.Errorf("classes[%d] is null or has no metadata.name", i)
		}
		if seen[class.Name] {
			return fmt.Errorf("classes[%d]: a second class named %q", i, class.Name)
		}
		seen[class.Name] = true
	}
	return nil
}

func fixNames() []string {
	names := []string{}
	for _, name := range strings.Split(appliedFixes, ",") {
		if name != "" {
			names = append(names, name)
		}
	}
	return names
}

func featureNames() []string {
	t := reflect.TypeOf(structured.Features{})
	names := make([]string, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		names = append(names, t.Field(i).Name)
	}
	return names
}

func write(v any) {
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(os.Stderr, "allocator: writing the answer: %v\n", err)
		os.Exit(1)
	}
}
