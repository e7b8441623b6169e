// Command benchchart draws the end-to-end bench's report (test/bench, `make bench-cluster`, issue
// 17) as one PNG with two panels: left, time (median seconds, a bar down to the min) against the
// database size; right, memory (median MiB) against the size. One line per figure name; the x
// axis is the size on a log2 scale, the y axes are linear from 0. Figures without a size (create
// -> Available) are not drawn.
//
//	go run ./hack/tools/benchchart -in bench/results/latest.json -out bench/results/latest.png
package main

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// report and figure are the parts of test/bench's JSON report that the chart reads.
type report struct {
	Started time.Time `json:"started"`
	Commit  string    `json:"commit"`
	Figures []figure  `json:"figures"`
}

type figure struct {
	Name   string    `json:"name"`
	Size   string    `json:"size"`
	Values []float64 `json:"values"`
	Unit   string    `json:"unit"` // "s" (also when empty) or "MiB"
	Min    float64   `json:"min"`
	Median float64   `json:"median"`
}

// point is one figure at one size; series is one figure name across the sizes.
type point struct{ mib, min, median float64 }

type series struct {
	name   string
	colour color.RGBA
	points []point
}

const (
	width, height = 1200, 500
	panelWidth    = width / 2
	lineHeight    = 16 // basicfont.Face7x13 is 13 pixels high, 7 wide
	charWidth     = 7
)

var (
	background = color.RGBA{255, 255, 255, 255}
	textColour = color.RGBA{0, 0, 0, 255}
	axisColour = color.RGBA{120, 120, 120, 255}
	gridColour = color.RGBA{225, 225, 225, 255}
	// palette colours the lines in order of first appearance in the report, across both panels.
	palette = []color.RGBA{
		{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {255, 127, 14, 255},
		{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {23, 190, 207, 255},
	}
)

func main() {
	in := flag.String("in", "bench/results/latest.json", "the bench's JSON report")
	out := flag.String("out", "", "PNG to write (default: -in with .png)")
	flag.Parse()
	if *out == "" {
		*out = strings.TrimSuffix(*in, ".json") + ".png"
	}
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "benchchart:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	raw, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var r report
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("reading %s: %w", in, err)
	}
	img, err := chart(r)
	if err != nil {
		return fmt.Errorf("charting %s: %w", in, err)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return f.Close()
}

// chart draws the report; a figure whose size does not parse is an error naming it.
func chart(r report) (*image.RGBA, error) {
	byUnit, n := map[string][]*series{}, 0
	for _, f := range r.Figures {
		if f.Size == "" {
			continue
		}
		mib, err := parseSize(f.Size)
		if err != nil {
			return nil, fmt.Errorf("figure %q: %w", f.Name, err)
		}
		unit := cmp.Or(f.Unit, "s")
		if unit != "s" && unit != "MiB" {
			continue
		}
		i := slices.IndexFunc(byUnit[unit], func(s *series) bool { return s.name == f.Name })
		if i < 0 {
			byUnit[unit] = append(byUnit[unit], &series{name: f.Name, colour: palette[n%len(palette)]})
			i, n = len(byUnit[unit])-1, n+1
		}
		s := byUnit[unit][i]
		s.points = append(s.points, point{mib, f.Min, f.Median})
	}
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	draw.Draw(img, img.Bounds(), image.NewUniform(background), image.Point{}, draw.Src)
	title := fmt.Sprintf("End-to-end bench (issue 17): time and memory against database size - %s, commit %s",
		r.Started.UTC().Format("2006-01-02 15:04 UTC"), cmp.Or(r.Commit, "unknown"))
	text(img, (width-len(title)*charWidth)/2, 20, title, textColour)
	// Both panels leave the same room for their legends, so that their plots line up.
	legendRows := max(len(byUnit["s"]), len(byUnit["MiB"]), 1)
	plotBottom := height - 32 - legendRows*lineHeight
	panel(img, 0, plotBottom, "time (median s; bar down to the min of the runs)", byUnit["s"])
	panel(img, panelWidth, plotBottom, "memory (median MiB)", byUnit["MiB"])
	return img, nil
}

// parseSize reads "64 MiB", "1 GiB" or "512KiB" as a number of MiB.
func parseSize(s string) (float64, error) {
	t := strings.TrimSpace(s)
	for _, u := range []struct {
		suffix string
		mib    float64
	}{{"KiB", 1.0 / 1024}, {"MiB", 1}, {"GiB", 1024}, {"TiB", 1024 * 1024}} {
		if n, ok := strings.CutSuffix(t, u.suffix); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
			if err != nil || v <= 0 || math.IsInf(v, 0) {
				break
			}
			return v * u.mib, nil
		}
	}
	return 0, fmt.Errorf("size %q is not a positive number of KiB, MiB, GiB or TiB", s)
}

// panel draws one panel at x0: heading, axes and ticks, a line per series, the legend below.
func panel(img *image.RGBA, x0, bottom int, heading string, ss []*series) {
	text(img, x0+60, 46, heading, textColour)
	if len(ss) == 0 {
		text(img, x0+(panelWidth-7*charWidth)/2, (60+bottom)/2, "no data", textColour)
		return
	}
	left, right, top := x0+70, x0+panelWidth-30, 60
	lo, hi, yMax := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range ss {
		slices.SortFunc(s.points, func(a, b point) int { return cmp.Compare(a.mib, b.mib) })
		for _, p := range s.points {
			lo, hi = min(lo, math.Log2(p.mib)), max(hi, math.Log2(p.mib))
			yMax = max(yMax, p.median, p.min)
		}
	}
	lo, hi = lo-0.5, hi+0.5 // room either side of the outermost sizes
	step := niceStep(yMax / 4)
	yMax = math.Max(step, math.Ceil(yMax/step)*step)
	px := func(mib float64) int {
		return left + int(math.Round((math.Log2(mib)-lo)/(hi-lo)*float64(right-left)))
	}
	py := func(v float64) int { return bottom - int(math.Round(v/yMax*float64(bottom-top))) }
	// y ticks: grid lines and labels, every step from 0.
	for v := 0.0; v <= yMax+step/2; v += step {
		y := py(v)
		line(img, left, y, right, y, gridColour, 1)
		label := strconv.FormatFloat(v, 'f', -1, 64)
		text(img, left-8-len(label)*charWidth, y+4, label, textColour)
	}
	// x ticks at the powers of two in range, every other one or more if they crowd.
	every := max(1, int(math.Ceil((hi-lo)/8)))
	for e := int(math.Ceil(lo)); float64(e) <= hi; e++ {
		if e%every != 0 {
			continue
		}
		x := px(math.Exp2(float64(e)))
		line(img, x, bottom, x, bottom+4, axisColour, 1)
		label := sizeLabel(math.Exp2(float64(e)))
		text(img, x-len(label)*charWidth/2, bottom+16, label, textColour)
	}
	line(img, left, top, left, bottom, axisColour, 1)
	line(img, left, bottom, right, bottom, axisColour, 1)
	for i, s := range ss {
		c := s.colour
		for j, p := range s.points {
			x, y := px(p.mib), py(p.median)
			line(img, x, py(p.min), x, y, c, 1) // min..median bar, capped at the min
			line(img, x-4, py(p.min), x+4, py(p.min), c, 1)
			draw.Draw(img, image.Rect(x-3, y-3, x+4, y+4), image.NewUniform(c), image.Point{}, draw.Src)
			if j > 0 {
				q := s.points[j-1]
				line(img, px(q.mib), py(q.median), x, y, c, 2)
			}
		}
		ly := bottom + 28 + i*lineHeight
		draw.Draw(img, image.Rect(x0+20, ly-6, x0+44, ly-2), image.NewUniform(c), image.Point{}, draw.Src)
		name := s.name
		if n := (panelWidth - 60) / charWidth; len(name) > n {
			name = name[:n-3] + "..."
		}
		text(img, x0+52, ly, name, textColour)
	}
}

// niceStep rounds x up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

func sizeLabel(mib float64) string {
	switch {
	case mib >= 1024:
		return strconv.FormatFloat(mib/1024, 'f', -1, 64) + " GiB"
	case mib < 1:
		return strconv.FormatFloat(mib*1024, 'f', -1, 64) + " KiB"
	}
	return strconv.FormatFloat(mib, 'f', -1, 64) + " MiB"
}

// line draws from (x0,y0) to (x1,y1) with Bresenham's algorithm, in squares of side w.
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA, w int) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		for i := range w {
			for j := range w {
				img.SetRGBA(x0+i, y0+j, c)
			}
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

// text draws s with its baseline at y; basicfont's glyphs are fully opaque or fully clear, so the
// image holds no blended colours.
func text(img *image.RGBA, x, y int, s string, c color.RGBA) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func abs(x int) int { return max(x, -x) }

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}
