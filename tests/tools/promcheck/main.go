// promcheck reads a metrics file in the Prometheus text format 0.0.4 the way
// node_exporter's textfile collector does (Go's expfmt.TextParser, from
// Debian's golang-github-prometheus-common-dev), refuses what that collector
// refuses (client-side timestamps), lints it with promlint (the checks of
// `promtool check metrics`: HELP present, counters end in _total, base units,
// ... from golang-github-prometheus-client-golang-dev), and prints what it
// parsed as JSON, so a test compares values read by the real parser.
//
// Usage: promcheck FILE
// Prints one JSON array of families ({name, type, help, metrics: [{labels,
// value} | {labels, count, sum, buckets}]}) and exits 0; on a parse error,
// a timestamp or a lint problem prints "INVALID: ..." lines and exits 1;
// exits 2 on misuse.
//
// Built offline in GOPATH mode by the e2e tests (tests/e2e/metrics.rs):
// GO111MODULE=off GOPATH=/usr/share/gocode go build -o BIN ./promcheck
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

type metric struct {
	Labels  map[string]string `json:"labels"`
	Value   *float64          `json:"value,omitempty"`
	Count   *uint64           `json:"count,omitempty"`
	Sum     *float64          `json:"sum,omitempty"`
	Buckets map[string]uint64 `json:"buckets,omitempty"`
}

type family struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Help    string   `json:"help"`
	Metrics []metric `json:"metrics"`
}

func convert(mf *dto.MetricFamily) (family, error) {
	out := family{Name: mf.GetName(), Type: mf.GetType().String(), Help: mf.GetHelp()}
	for _, m := range mf.GetMetric() {
		if m.TimestampMs != nil {
			return out, fmt.Errorf("%s: client-side timestamps are refused by the textfile collector", mf.GetName())
		}
		got := metric{Labels: map[string]string{}}
		for _, l := range m.GetLabel() {
			got.Labels[l.GetName()] = l.GetValue()
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			v := m.GetCounter().GetValue()
			got.Value = &v
		case dto.MetricType_GAUGE:
			v := m.GetGauge().GetValue()
			got.Value = &v
		case dto.MetricType_HISTOGRAM:
			h := m.GetHistogram()
			count, sum := h.GetSampleCount(), h.GetSampleSum()
			got.Count, got.Sum = &count, &sum
			got.Buckets = map[string]uint64{}
			for _, b := range h.GetBucket() {
				le := fmt.Sprint(b.GetUpperBound())
				if math.IsInf(b.GetUpperBound(), 1) {
					le = "+Inf"
				}
				got.Buckets[le] = b.GetCumulativeCount()
			}
		default:
			return out, fmt.Errorf("%s: type %s is not one gpusliced writes", mf.GetName(), mf.GetType())
		}
		out.Metrics = append(out.Metrics, got)
	}
	return out, nil
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: promcheck FILE")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer f.Close()
	var parser expfmt.TextParser
	parsed, err := parser.TextToMetricFamilies(f)
	if err != nil {
		fmt.Println("INVALID:", err)
		os.Exit(1)
	}
	names := make([]string, 0, len(parsed))
	for name := range parsed {
		names = append(names, name)
	}
	sort.Strings(names)
	var list []*dto.MetricFamily
	var out []family
	bad := false
	for _, name := range names {
		list = append(list, parsed[name])
		fam, err := convert(parsed[name])
		if err != nil {
			fmt.Println("INVALID:", err)
			bad = true
		}
		out = append(out, fam)
	}
	problems, err := promlint.NewWithMetricFamilies(list).Lint()
	if err != nil {
		fmt.Println("INVALID: lint:", err)
		bad = true
	}
	for _, p := range problems {
		fmt.Printf("INVALID: lint: %s: %s\n", p.Metric, p.Text)
		bad = true
	}
	if bad {
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
