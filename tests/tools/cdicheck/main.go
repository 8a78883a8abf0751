// cdicheck loads CDI spec files with the reference Go CDI library (Debian's
// golang-github-container-orchestrated-devices-container-device-interface-dev,
// the code podman and containerd 1.7 link) and applies every device's edits to
// an empty OCI spec, as a runtime would at container creation.
//
// Usage: cdicheck [-inject] SPEC_FILE...
// With -inject, each device's hostPaths must be real device nodes: the
// library (runc's DeviceFromPath) lstat()s them, so a symlink fails with
// "not a device node", exactly as podman would fail.
// Prints "OK <file>: <vendor/class>=<device>" per device, or
// "INVALID <file>: <reason>"; exits 1 when any file is invalid, 2 on misuse.
//
// Built offline in GOPATH mode by the e2e tests (tests/e2e/go_cdi.rs):
// GO111MODULE=off GOPATH=/usr/share/gocode go build -o BIN ./cdicheck
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/container-orchestrated-devices/container-device-interface/pkg/cdi"
	"github.com/container-orchestrated-devices/container-device-interface/pkg/cdi/validate"
	"github.com/container-orchestrated-devices/container-device-interface/schema"
	oci "github.com/opencontainers/runtime-spec/specs-go"
)

func check(path string, inject bool) error {
	spec, err := cdi.ReadSpec(path, 0)
	if err != nil {
		return err
	}
	// A spec that declares no device is legal for the library but useless
	// to us: every spec gpusliced writes names the claim's devices.
	names := 0
	for _, d := range spec.Devices {
		dev := spec.GetDevice(d.Name)
		if dev == nil {
			return fmt.Errorf("device %q not registered by the library", d.Name)
		}
		// Injection stats each device node's hostPath (type, major, minor)
		// and merges env, mounts and hooks, like podman's CDI step.
		if inject {
			if err := dev.ApplyEdits(&oci.Spec{}); err != nil {
				return fmt.Errorf("applying %s: %v", dev.GetQualifiedName(), err)
			}
		}
		fmt.Printf("OK %s: %s\n", path, dev.GetQualifiedName())
		names++
	}
	if names == 0 {
		return fmt.Errorf("no devices")
	}
	return nil
}

func main() {
	inject := flag.Bool("inject", false, "also apply each device's edits to an empty OCI spec")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: cdicheck [-inject] SPEC_FILE...")
		os.Exit(2)
	}
	// Also the JSON schema built into the library.
	cdi.SetSpecValidator(validate.WithSchema(schema.BuiltinSchema()))
	rc := 0
	for _, path := range flag.Args() {
		if err := check(path, *inject); err != nil {
			fmt.Printf("INVALID %s: %v\n", path, err)
			rc = 1
		}
	}
	os.Exit(rc)
}
