//go:build e2e && bench

package bench

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/benchutil"
)

// figure is one measured quantity over the runs, with its baseline and target.
type figure struct {
	Name string `json:"name"`
	Size string `json:"size,omitempty"` // the database size, for figures that depend on it
	// Values holds one measurement per run, in Unit: "s" (the default) or "MiB" (memory).
	Values []float64 `json:"values"`
	Unit   string    `json:"unit,omitempty"`
	// Note is shown beside the figure (the snapshot's size, say).
	Note string `json:"note,omitempty"`
	// Baseline names the figure (same Size) this one is compared with, as median/median.
	Baseline string `json:"baseline,omitempty"`
	// Target is the target in words; TargetRatio (to the baseline) or TargetMax (in
	// Unit, the median must stay below it) make it checkable.
	Target      string  `json:"target,omitempty"`
	TargetRatio float64 `json:"targetRatio,omitempty"`
	TargetMax   float64 `json:"targetMax,omitempty"`
	// Miss says, for a missed target, what the time is made of and what would close the gap
	// (from the events of the runs that were looked at); printed only when the target is missed.
	Miss string `json:"miss,omitempty"`
	// Computed by write.
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Ratio  float64 `json:"ratio,omitempty"`
	Met    *bool   `json:"met,omitempty"`
}

// report collects the figures of one run of the bench.
type report struct {
	mu      sync.Mutex
	Started time.Time `json:"started"`
	Commit  string    `json:"commit"`
	Machine string    `json:"machine"`
	Runs    int       `json:"runs"`
	Figures []*figure `json:"figures"`
}

func (r *report) add(f figure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Figures = append(r.Figures, &f)
}

// write computes min, median, ratios and targets and writes BENCH_OUT (markdown) and its .json.
func (r *report) write(t *testing.T) {
	out := os.Getenv("BENCH_OUT")
	if out == "" {
		t.Log("BENCH_OUT not set: results not written")
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		r.Commit = strings.TrimSpace(string(c))
	}
	r.Machine = fmt.Sprintf("%d cores, %s/%s, %s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	by := map[string]*figure{}
	for _, f := range r.Figures {
		by[f.Size+"|"+f.Name] = f
		if f.Unit == "" {
			f.Unit = "s"
		}
		f.Min, f.Median = slices.Min(f.Values), benchutil.Median(f.Values)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# End-to-end bench on the local cluster\n\n")
	fmt.Fprintf(&b, "- Date: %s; commit %s; %s; %d runs per figure (min and median)\n", r.Started.Format("2006-01-02 15:04 UTC"), r.Commit, r.Machine, r.Runs)
	fmt.Fprintf(&b, "- Command: `make bench-cluster` (BENCH_SIZES, BENCH_RUNS); every figure beside its baseline from the same run\n")
	fmt.Fprintf(&b, "- Size: the database is filled with that many values of 1 MiB (the backup row gives the snapshot's size); restores are of the newest backup, 3-member clusters on volumes\n\n")
	fmt.Fprintf(&b, "| size | figure | min | median | baseline median | ratio | target | met |\n|---|---|---|---|---|---|---|---|\n")
	for _, f := range r.Figures {
		base, ratio := "", ""
		if bf := by[f.Size+"|"+f.Baseline]; bf != nil && bf.Median > 0 {
			f.Ratio = f.Median / bf.Median
			base, ratio = fmt.Sprintf("%.1f %s", bf.Median, bf.Unit), fmt.Sprintf("%.2fx", f.Ratio)
		}
		met := ""
		switch {
		case f.TargetRatio > 0 && f.Ratio > 0:
			ok := f.Ratio <= f.TargetRatio
			f.Met = &ok
		case f.TargetMax > 0:
			ok := f.Median < f.TargetMax
			f.Met = &ok
		}
		if f.Met != nil {
			met = map[bool]string{true: "yes", false: "**no**"}[*f.Met]
		}
		name := f.Name
		if f.Note != "" {
			name += " (" + f.Note + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %.1f %s | %.1f %s | %s | %s | %s | %s |\n", f.Size, name, f.Min, f.Unit, f.Median, f.Unit, base, ratio, f.Target, met)
	}
	// One line per figure whose target was missed, naming the sizes it was missed at.
	var missed []*figure
	seen, sizes := map[string]bool{}, map[string][]string{}
	for _, f := range r.Figures {
		if f.Met == nil || *f.Met || f.Miss == "" {
			continue
		}
		if !seen[f.Name] {
			seen[f.Name] = true
			missed = append(missed, f)
		}
		if f.Size != "" {
			sizes[f.Name] = append(sizes[f.Name], f.Size)
		}
	}
	if len(missed) > 0 {
		fmt.Fprintf(&b, "\nTargets missed, and why:\n\n")
		for _, f := range missed {
			at := ""
			if sz := sizes[f.Name]; len(sz) > 0 {
				at = " (" + strings.Join(sz, ", ") + ")"
			}
			fmt.Fprintf(&b, "- %s%s: %s\n", f.Name, at, f.Miss)
		}
	}
	if err := benchutil.WriteResults(out, b.String(), r); err != nil {
		t.Error(err)
	}
	t.Logf("results in %s", out)
}
