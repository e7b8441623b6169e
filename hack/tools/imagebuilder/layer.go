package main

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
)

// writeLayer writes to w an uncompressed tar with the requested files and directories, the extra
// files (image path -> content, mode 0644), their parent directories, and /tmp (mode 1777),
// sorted by path, owned by root, all dated epoch. Files are streamed from disk: a layer of a
// two-platform build is 200 MB, and held in memory it cost more CPU (growing and clearing
// buffers) than compressing it.
func writeLayer(w io.Writer, files, dirs []string, extra map[string][]byte) error {
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
				return fmt.Errorf("bad mode in -dir %q: %w", d, err)
			}
		}
		p = clean(p)
		entries[p] = entry{mode: mode}
		addParents(p)
	}
	for _, f := range files {
		src, dst, ok := strings.Cut(f, "=")
		if !ok {
			return fmt.Errorf("-file %q: want SRC=DST", f)
		}
		st, err := os.Stat(src)
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("-file %q: %s is not a regular file", f, src)
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

	tw := tar.NewWriter(w)
	for _, p := range paths {
		e := entries[p]
		hdr := &tar.Header{Name: p, Mode: e.mode, ModTime: epoch, Uname: "root", Gname: "root", Format: tar.FormatPAX}
		var err error
		switch {
		case e.src != "":
			err = writeFile(tw, hdr, e.src)
		case e.data == nil:
			hdr.Typeflag, hdr.Name = tar.TypeDir, p+"/"
			err = tw.WriteHeader(hdr)
		default:
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(e.data))
			if err = tw.WriteHeader(hdr); err == nil {
				_, err = tw.Write(e.data)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return tw.Close()
}

// writeFile writes the host file src as a regular file of hdr's name and mode.
func writeFile(tw *tar.Writer, hdr *tar.Header, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	hdr.Typeflag, hdr.Size = tar.TypeReg, st.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	// A file that changed size since the Stat fails here (tar's short or long write).
	_, err = io.Copy(tw, f)
	return err
}
