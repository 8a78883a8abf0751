package main

// What kube-scheduler's dynamicresources plugin (Kubernetes 1.36,
// pkg/scheduler/framework/plugins/dynamicresources) does around the
// allocator, for one pod and one node:
//
//   - PreFilter: every request names a class that exists (else the pod is
//     unschedulable), a request with subrequests needs DRAPrioritizedList;
//     the allocated state gathered from the allocated claims
//     (allocateddevices.go: foreachAllocatedDevice); one CEL cache; one
//     allocator from NewAllocator.
//   - Filter: Allocate for the node; ErrFailedAllocationOnNode or fewer
//     results than claims is "unschedulable", any other error a scheduling
//     error.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// The scheduler's CEL cache size (dynamicresources.go, New).
const celCacheSize = 10

// celCaches holds one CEL cache per set of CEL features, kept across the
// questions of a stream as the scheduler keeps its one for its lifetime.
type celCaches map[cel.Features]*cel.Cache

func newCelCaches() celCaches {
	return celCaches{}
}

func (c celCaches) get(features cel.Features) *cel.Cache {
	cache, ok := c[features]
	if !ok {
		cache = cel.NewCache(celCacheSize, features)
		c[features] = cache
	}
	return cache
}

func schedule(in *input, caches celCaches) answer {
	classes := newClassLister(in.Classes)
	if a, done := preFilter(in, classes); done {
		return a
	}
	features := in.Features
	state := allocatedState(in.Allocated, features.ConsumableCapacity)
	celCache := caches.get(cel.Features{
		EnableConsumableCapacity: features.ConsumableCapacity,
		EnableListTypeAttributes: features.ListTypeAttributes,
	})
	ctx := context.Background()
	allocator, err := structured.NewAllocator(ctx, features, state, classes, in.Slices, celCache)
	if err != nil {
		return answer{Outcome: "error", Stage: "prefilter", Reason: err.Error()}
	}
	channel := channelOf(allocator)
	results, calls, err := allocate(ctx, allocator, in)
	if in.MaxAllocateOneCalls > 0 && calls > in.MaxAllocateOneCalls {
		return answer{Outcome: "limit", Allocator: channel, Stage: "filter", Calls: calls,
			Reason: fmt.Sprintf("gave up after more than %d allocateOne calls, as kube-scheduler gives up at its filter timeout (DRASchedulerFilterTimeout)", in.MaxAllocateOneCalls)}
	}
	switch {
	case errors.Is(err, structured.ErrFailedAllocationOnNode):
		return answer{Outcome: "unschedulable", Allocator: channel, Stage: "filter", Reason: err.Error()}
	case err != nil:
		return answer{Outcome: "error", Allocator: channel, Stage: "filter", Reason: err.Error()}
	case len(results) != len(in.Claims):
		return answer{Outcome: "unschedulable", Allocator: channel, Stage: "filter", Reason: "cannot allocate all claims"}
	}
	allocations := make([]claimAllocation, len(results))
	for i, result := range results {
		claim := in.Claims[i]
		allocations[i] = claimAllocation{Claim: claim.Namespace + "/" + claim.Name, Allocation: result}
	}
	return answer{Outcome: "allocated", Allocator: channel, Allocations: allocations}
}

// allocate runs Allocate and counts its allocateOne calls (the
// allocator's own statistic). With a budget, a search that passes it is
// cancelled; the caller then answers "limit" whatever Allocate returned, so
// the answer depends only on whether the whole search needs more calls
// than the budget, never on when the cancellation landed.
func allocate(ctx context.Context, allocator structured.Allocator, in *input) ([]resourceapi.AllocationResult, int64, error) {
	type done struct {
		results []resourceapi.AllocationResult
		err     error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	finished := make(chan done, 1)
	go func() {
		results, err := allocator.Allocate(ctx, &in.Node, in.Claims)
		finished <- done{results, err}
	}()
	ticker := time.NewTicker(time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case d := <-finished:
			return d.results, allocateOneCalls(allocator), d.err
		case <-ticker.C:
			if in.MaxAllocateOneCalls > 0 && allocateOneCalls(allocator) > in.MaxAllocateOneCalls {
				cancel()
			}
		}
	}
}

// allocateOneCalls reads the allocator's GetStats (not in the public
// interface) through reflection, as channelOf reads Channel.
func allocateOneCalls(allocator structured.Allocator) int64 {
	method := reflect.ValueOf(allocator).MethodByName("GetStats")
	if !method.IsValid() {
		return 0
	}
	field := method.Call(nil)[0].FieldByName("NumAllocateOneInvocations")
	if !field.IsValid() {
		return 0
	}
	return field.Int()
}

// preFilter mirrors the plugin's checks of the claims before it builds the
// allocator: done is true when they decided the answer.
func preFilter(in *input, classes *classLister) (answer, bool) {
	unschedulable := func(format string, args ...any) (answer, bool) {
		return answer{Outcome: "unschedulable", Stage: "prefilter", Reason: fmt.Sprintf(format, args...)}, true
	}
	for _, claim := range in.Claims {
		key := claim.Namespace + "/" + claim.Name
		for _, request := range claim.Spec.Devices.Requests {
			switch {
			case request.Exactly != nil:
				if a, done := validateClass(classes, request.Exactly.DeviceClassName, request.Name); done {
					return a, true
				}
			case len(request.FirstAvailable) > 0:
				if !in.Features.PrioritizedList {
					return unschedulable("resource claim %s, request %s: has subrequests, but the DRAPrioritizedList feature is disabled", key, request.Name)
				}
				for _, sub := range request.FirstAvailable {
					if a, done := validateClass(classes, sub.DeviceClassName, request.Name+"/"+sub.Name); done {
						return a, true
					}
				}
			default:
				return unschedulable("resource claim %s, request %s: unknown request type", key, request.Name)
			}
		}
	}
	return answer{}, false
}

func validateClass(classes *classLister, className, requestName string) (answer, bool) {
	if className == "" {
		return answer{Outcome: "error", Stage: "prefilter", Reason: fmt.Sprintf("request %s: unsupported request type", requestName)}, true
	}
	if _, err := classes.Get(className); apierrors.IsNotFound(err) {
		return answer{Outcome: "unschedulable", Stage: "prefilter", Reason: fmt.Sprintf("request %s: device class %s does not exist", requestName, className)}, true
	}
	return answer{}, false
}

// allocatedState is what the plugin's allocatedDevices tracker holds for
// these claims: devices allocated with admin access are not in use; with
// consumable capacity, a result with a share id is a share of its device
// and adds its consumed capacity; every other result holds its device.
func allocatedState(claims []*resourceapi.ResourceClaim, consumableCapacity bool) structured.AllocatedState {
	state := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	for _, claim := range claims {
		for _, result := range claim.Status.Allocation.Devices.Results {
			if ptr.Deref(result.AdminAccess, false) {
				continue
			}
			id := structured.MakeDeviceID(result.Driver, result.Pool, result.Device)
			if consumableCapacity && result.ShareID != nil {
				state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, result.ShareID))
				if result.ConsumedCapacity != nil {
					state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, result.ConsumedCapacity))
				}
				continue
			}
			state.AllocatedDevices.Insert(id)
		}
	}
	return state
}

// channelOf names the implementation NewAllocator picked for the features
// ("stable", "incubating" or "experimental"): its Channel method is not in
// the public interface.
func channelOf(allocator structured.Allocator) string {
	method := reflect.ValueOf(allocator).MethodByName("Channel")
	if !method.IsValid() {
		return "unknown"
	}
	return method.Call(nil)[0].String()
}

// classLister answers like the scheduler's DeviceClass lister: a missing
// class is a NotFound error.
type classLister struct {
	byName map[string]*resourceapi.DeviceClass
}

func newClassLister(classes []*resourceapi.DeviceClass) *classLister {
	byName := make(map[string]*resourceapi.DeviceClass, len(classes))
	for _, class := range classes {
		byName[class.Name] = class
	}
	return &classLister{byName: byName}
}

func (l *classLister) List() ([]*resourceapi.DeviceClass, error) {
	classes := make([]*resourceapi.DeviceClass, 0, len(l.byName))
	for _, class := range l.byName {
		classes = append(classes, class)
	}
	sort.Slice(classes, func(i, j int) bool { return classes[i].Name < classes[j].Name })
	return classes, nil
}

func (l *classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	class, ok := l.byName[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "resource.k8s.io", Resource: "deviceclasses"}, name)
	}
	return class, nil
}
