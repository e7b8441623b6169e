package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
)

// buildLayer returns an uncompressed tar with the requested files and directories, the extra
// files (image path -> content, mode 0644), their parent directories, and /tmp (mode 1777),
// sorted by path, owned by root, all dated epoch.
func buildLayer(files, dirs []string, extra map[string][]byte) ([]byte, error) {
	type entry struct {
		src  string // host file; empty for a directory or extra content
		data []byte // extra content
		mode int64
	}
	entries := map[string]entry{"tmp": {mode: 0o1777}}
	addParents := func(p string) {
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			if _, ok := entries[d]; !ok {
				entries[d] = entry{mode: 0o755}
			}
		}
	}
	clean := func(p string) string { return strings.Trim(path.Clean("/"+p), "/") }
	for _, d := range dirs {
		p, modeStr, _ := strings.Cut(d, ":")
		mode := int64(0o755)
		if modeStr != "" {
			if _, err := fmt.Sscanf(modeStr, "%o", &mode); err != nil {
				return nil, fmt.Errorf("bad mode in -dir %q: %w", d, err)
			}
		}
		p = clean(p)
		entries[p] = entry{mode: mode}
		addParents(p)
	}
	for _, f := range files {
		src, dst, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("-file %q: want SRC=DST", f)
		}
		st, err := os.Stat(src)
		if err != nil {
			return nil, err
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("-file %q: %s is not a regular file", f, src)
		}
		p := clean(dst)
		entries[p] = entry{src: src, mode: int64(st.Mode().Perm())}
		addParents(p)
	}
	for dst, data := range extra {
		p := clean(dst)
		entries[p] = entry{data: data, mode: 0o644}
		addParents(p)
	}
	paths := make([]string, 0, len(entries))
	for p := range entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		e := entries[p]
		hdr := &tar.Header{Name: p, Mode: e.mode, ModTime: epoch, Uname: "root", Gname: "root", Format: tar.FormatPAX}
		data := e.data
		switch {
		case e.src != "":
			var err error
			if data, err = os.ReadFile(e.src); err != nil {
				return nil, err
			}
		case data == nil:
			hdr.Typeflag, hdr.Name = tar.TypeDir, p+"/"
			if err := tw.WriteHeader(hdr); err != nil {
				return nil, err
			}
			continue
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(data))
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
