// Command imagebuilder writes a single-layer linux/amd64 container image, made of static
// binaries and nothing else, as a docker archive that `ctr images import` (or `docker load`)
// accepts. No base image is pulled: the image starts from go-containerregistry's empty.Image.
//
//	imagebuilder -out etcd.tar -tag quay.io/coreos/etcd:v3.6.16 \
//	  -file .cache/bin/etcd-v3.6.16/etcd=/usr/local/bin/etcd -entrypoint /usr/local/bin/etcd
//
// The layer is reproducible (fixed timestamps and owners, sorted entries), so the same inputs
// give the same image digest; it prints the config digest (image ID) and manifest digest.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// epoch is the modification time of every entry and the image's creation time, so that
// rebuilding from the same inputs gives byte-identical layers and digests.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type options struct {
	out        string
	tags       listFlag
	files      listFlag
	dirs       listFlag
	entrypoint listFlag
	env        listFlag
	user       string
	workdir    string
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "", "docker archive to write (required)")
	flag.Var(&o.tags, "tag", "image reference to tag the image with (repeatable, at least one)")
	flag.Var(&o.files, "file", "SRC=DST: copy host file SRC to DST in the image, keeping its mode (repeatable)")
	flag.Var(&o.dirs, "dir", "DST[:MODE]: an empty directory, MODE octal (default 0755) (repeatable)")
	flag.Var(&o.entrypoint, "entrypoint", "one entrypoint element (repeatable, in order)")
	flag.Var(&o.env, "env", "KEY=VALUE in the image config (repeatable; PATH is set by default)")
	flag.StringVar(&o.user, "user", "", "numeric user[:group] the image runs as (empty: root)")
	flag.StringVar(&o.workdir, "workdir", "/", "working directory")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuilder:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.out == "" || len(o.tags) == 0 {
		return errors.New("-out and at least one -tag are required")
	}
	layerTar, err := buildLayer(o.files, o.dirs)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return fmt.Errorf("creating layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return fmt.Errorf("appending layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	// Without OS and Architecture containerd filters the image out of the node's platform.
	cfg.OS = "linux"
	cfg.Architecture = "amd64"
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.Entrypoint = o.entrypoint
	cfg.Config.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, o.env...)
	cfg.Config.User = o.user
	cfg.Config.WorkingDir = o.workdir
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return fmt.Errorf("setting config: %w", err)
	}

	refs := map[name.Reference]v1.Image{}
	for _, t := range o.tags {
		tag, err := name.NewTag(t)
		if err != nil {
			return fmt.Errorf("parsing tag %q: %w", t, err)
		}
		refs[tag] = img
	}
	tmp := o.out + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		return fmt.Errorf("writing %s: %w", o.out, err)
	}
	if err := os.Rename(tmp, o.out); err != nil {
		return err
	}
	id, err := img.ConfigName()
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("id=%s digest=%s\n", id, digest)
	return nil
}

// buildLayer returns an uncompressed tar with the requested files and directories, their parent
// directories, and /tmp (mode 1777), sorted by path, owned by root, all dated epoch.
func buildLayer(files, dirs []string) ([]byte, error) {
	type entry struct {
		src  string // host file; empty for a directory
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
	for _, d := range dirs {
		p, modeStr, _ := strings.Cut(d, ":")
		mode := int64(0o755)
		if modeStr != "" {
			if _, err := fmt.Sscanf(modeStr, "%o", &mode); err != nil {
				return nil, fmt.Errorf("bad mode in -dir %q: %w", d, err)
			}
		}
		p = strings.Trim(path.Clean("/"+p), "/")
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
		p := strings.Trim(path.Clean("/"+dst), "/")
		entries[p] = entry{src: src, mode: int64(st.Mode().Perm())}
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
		if e.src == "" {
			hdr.Typeflag, hdr.Name = tar.TypeDir, p+"/"
			if err := tw.WriteHeader(hdr); err != nil {
				return nil, err
			}
			continue
		}
		data, err := os.ReadFile(e.src)
		if err != nil {
			return nil, err
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
