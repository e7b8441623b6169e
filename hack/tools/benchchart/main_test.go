package main

import (
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// load reads the fixture: four time figures and two memory figures at 64 MiB, 256 MiB and 1 GiB,
// plus one time and one memory figure without a size.
func load(t *testing.T) report {
	t.Helper()
	raw, err := os.ReadFile("testdata/report.json")
	if err != nil {
		t.Fatal(err)
	}
	var r report
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// colours counts the pixels of each colour in the rectangle.
func colours(img image.Image, r image.Rectangle) map[color.RGBA]int {
	seen := map[color.RGBA]int{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			seen[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	return seen
}

func TestRunWritesAPNGWithEveryLine(t *testing.T) {
	out := filepath.Join(t.TempDir(), "latest.png")
	if err := run("testdata/report.json", out); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decoding the chart: %v", err)
	}
	if got := img.Bounds().Size(); got != image.Pt(width, height) {
		t.Fatalf("size %v, want %dx%d", got, width, height)
	}
	// Six named lines with a size, four in the left (time) panel and two in the right (memory).
	left := colours(img, image.Rect(0, 0, panelWidth, height))
	right := colours(img, image.Rect(panelWidth, 0, width, height))
	for i, c := range palette[:6] {
		half, name := left, "left"
		if i >= 4 {
			half, name = right, "right"
		}
		if half[c] == 0 {
			t.Errorf("series %d's colour %v is missing from the %s panel", i, c, name)
		}
	}
	for _, c := range palette[6:] {
		if left[c]+right[c] > 0 {
			t.Errorf("colour %v drawn, but the fixture has only six lines with a size", c)
		}
	}
}

func TestNoMemoryFiguresIsANoDataPanel(t *testing.T) {
	r := load(t)
	var kept []figure
	for _, f := range r.Figures {
		if f.Unit != "MiB" {
			kept = append(kept, f)
		}
	}
	r.Figures = kept
	img, err := chart(r)
	if err != nil {
		t.Fatal(err)
	}
	for c, n := range colours(img, image.Rect(panelWidth, 0, width, height)) {
		if c != background && c != textColour {
			t.Errorf("the empty memory panel has %d pixels of %v: want only the background and text", n, c)
		}
	}
	if colours(img, image.Rect(0, 0, panelWidth, height))[palette[0]] == 0 {
		t.Error("the time panel lost its lines")
	}
}

func TestMalformedSizeNamesTheFigure(t *testing.T) {
	r := load(t)
	r.Figures[3].Size = "lots"
	_, err := chart(r)
	if err == nil || !strings.Contains(err.Error(), r.Figures[3].Name) || !strings.Contains(err.Error(), `"lots"`) {
		t.Fatalf("got error %v, want one naming %q and its size", err, r.Figures[3].Name)
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"64 MiB", 64, true},
		{"1 GiB", 1024, true},
		{"4GiB", 4096, true},
		{"512 KiB", 0.5, true},
		{"1.5 GiB", 1536, true},
		{"64 MB", 0, false},
		{"MiB", 0, false},
		{"-1 GiB", 0, false},
		{"", 0, false},
	} {
		got, err := parseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSize(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
