// Command chaosreport sums up the chaos suite's results (one JSON object per run, written by
// test/chaos) into the markdown table of docs/reliability.md: per fault kind, runs, survived,
// writes acknowledged, writes lost, and time to heal (median, max).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

type result struct {
	Kind     string        `json:"kind"`
	Seed     uint64        `json:"seed"`
	Survived bool          `json:"survived"`
	Acked    int           `json:"acked"`
	Lost     int           `json:"lost"`
	Heal     time.Duration `json:"healNanos"`
}

func main() {
	in := flag.String("in", ".cache/chaos/results.jsonl", "results, one JSON object per line")
	out := flag.String("out", "", "markdown file to write (default: stdout)")
	flag.Parse()
	f, err := os.Open(*in)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	byKind := map[string][]result{}
	var kinds []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			fmt.Fprintf(os.Stderr, "skipping a line: %v\n", err)
			continue
		}
		if _, ok := byKind[r.Kind]; !ok {
			kinds = append(kinds, r.Kind)
		}
		byKind[r.Kind] = append(byKind[r.Kind], r)
	}
	var b strings.Builder
	b.WriteString("| fault | runs | survived | writes acknowledged | writes lost | heal median | heal max | seeds that failed |\n|---|---|---|---|---|---|---|---|\n")
	for _, k := range kinds {
		rs := byKind[k]
		survived, acked, lost := 0, 0, 0
		var heals []time.Duration
		var failed []string
		for _, r := range rs {
			acked += r.Acked
			lost += r.Lost
			if r.Survived {
				survived++
			} else {
				failed = append(failed, fmt.Sprint(r.Seed))
			}
			if r.Heal > 0 {
				heals = append(heals, r.Heal)
			}
		}
		slices.Sort(heals)
		med, mx := "-", "-"
		if len(heals) > 0 {
			med, mx = heals[len(heals)/2].Round(100*time.Millisecond).String(), heals[len(heals)-1].Round(100*time.Millisecond).String()
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s | %s | %s |\n", k, len(rs), survived, acked, lost, med, mx, strings.Join(failed, ", "))
	}
	if *out == "" {
		fmt.Print(b.String())
		return
	}
	if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
