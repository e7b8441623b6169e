package main

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// pushTimeout bounds a whole push.
const pushTimeout = 10 * time.Minute

// writeDocker writes img as a docker archive naming every tag, atomically.
func writeDocker(out string, tags []string, img v1.Image) error {
	refs := map[name.Reference]v1.Image{}
	for _, t := range tags {
		tag, err := name.NewTag(t)
		if err != nil {
			return fmt.Errorf("parsing tag %q: %w", t, err)
		}
		refs[tag] = img
	}
	tmp := out + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return os.Rename(tmp, out)
}

// writeOCI writes idx as an OCI image layout in a tar, atomically. Its index.json names the
// index once per tag, with containerd's image name annotation (the full reference, as
// `ctr images import` stores it) and the OCI ref name.
func writeOCI(out string, tags []string, idx v1.ImageIndex) error {
	dir, err := os.MkdirTemp(filepath.Dir(out), ".oci-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	for _, t := range tags {
		tag, err := name.NewTag(t)
		if err != nil {
			return fmt.Errorf("parsing tag %q: %w", t, err)
		}
		if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
			"io.containerd.image.name":          containerdName(tag),
			"org.opencontainers.image.ref.name": tag.TagStr(),
		})); err != nil {
			return fmt.Errorf("writing the OCI layout: %w", err)
		}
	}
	tmp := out + ".tmp"
	if err := tarDir(dir, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// containerdName is the name containerd stores for tag (docker's default registry spelled
// docker.io, official images under library/).
func containerdName(tag name.Tag) string {
	reg := tag.RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	return reg + "/" + tag.RepositoryStr() + ":" + tag.TagStr()
}

// tarDir writes the files under dir into a tar at out, sorted, with fixed times and owners.
func tarDir(dir, out string) error {
	var paths []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != dir {
			paths = append(paths, p)
		}
		return err
	}); err != nil {
		return err
	}
	sort.Strings(paths)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: epoch, Mode: 0o644, Format: tar.FormatPAX}
		if st.IsDir() {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			continue
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, st.Size()
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, src)
		src.Close()
		if err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// push uploads idx and its images to ref, with the credentials of the docker config
// ($DOCKER_CONFIG, ~/.docker/config.json) when it has some for the registry. go-containerregistry
// speaks plain HTTP to localhost, loopback and private (RFC 1918) addresses, and with insecure.
func push(ref string, insecure bool, idx v1.ImageIndex) error {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return fmt.Errorf("parsing %q: %w", ref, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), pushTimeout)
	defer cancel()
	if err := remote.WriteIndex(r, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("pushing %s: %w", r, err)
	}
	return nil
}
