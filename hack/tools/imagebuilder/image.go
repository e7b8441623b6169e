package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func parsePlatforms(s string) ([]v1.Platform, error) {
	var ps []v1.Platform
	for _, p := range strings.Split(s, ",") {
		os, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || os == "" || arch == "" || strings.Contains(arch, "/") {
			return nil, fmt.Errorf("-platform %q: want os/arch[,os/arch...]", s)
		}
		ps = append(ps, v1.Platform{OS: os, Architecture: arch})
	}
	return ps, nil
}

// buildIndex builds one image per platform and the OCI image index of them, in that order.
func buildIndex(o options, platforms []v1.Platform, created time.Time) (v1.ImageIndex, []v1.Image, error) {
	var extra map[string][]byte
	if o.caRoots != "" {
		pem, n, err := caBundle()
		if err != nil {
			return nil, nil, err
		}
		if n < 100 {
			return nil, nil, fmt.Errorf("the CA roots bundle holds only %d certificates", n)
		}
		extra = map[string][]byte{o.caRoots: pem}
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var imgs []v1.Image
	for _, p := range platforms {
		img, err := buildImage(o, p, created, extra)
		if err != nil {
			return nil, nil, fmt.Errorf("%s/%s: %w", p.OS, p.Architecture, err)
		}
		imgs = append(imgs, img)
		p := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return idx, imgs, nil
}

func buildImage(o options, p v1.Platform, created time.Time, extra map[string][]byte) (v1.Image, error) {
	r := strings.NewReplacer("{os}", p.OS, "{arch}", p.Architecture)
	files := make([]string, len(o.files))
	for i, f := range o.files {
		src, dst, _ := strings.Cut(f, "=")
		files[i] = r.Replace(src) + "=" + dst
	}
	layer, err := newGzipLayer(func(w io.Writer) error { return writeLayer(w, files, o.dirs, extra) })
	if err != nil {
		return nil, fmt.Errorf("creating layer: %w", err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, fmt.Errorf("appending layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	// Without OS and Architecture containerd filters the image out of the node's platform.
	cfg.OS, cfg.Architecture = p.OS, p.Architecture
	cfg.Created = v1.Time{Time: created}
	cfg.Config.Entrypoint = o.entrypoint
	cfg.Config.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, o.env...)
	cfg.Config.User = o.user
	cfg.Config.WorkingDir = o.workdir
	for _, l := range o.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return nil, fmt.Errorf("-label %q: want KEY=VALUE", l)
		}
		if cfg.Config.Labels == nil {
			cfg.Config.Labels = map[string]string{}
		}
		cfg.Config.Labels[k] = v
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("setting config: %w", err)
	}
	return img, nil
}

// gzipLayer is a layer compressed once, as it was written, with the digest of its uncompressed
// tar taken on the way. go-containerregistry's tarball.LayerFromOpener, given the tar, gzipped
// it again each time it read the layer (once for its digest, once more to write it) and, given
// the gzip, read it back uncompressed for its diff ID: three passes over 200 MB where one does.
// Same gzip level as its default (BestSpeed), so the layer's bytes and digests are the same.
type gzipLayer struct {
	gz             []byte
	digest, diffID v1.Hash
}

var _ partial.WithDiffID = (*gzipLayer)(nil)

// newGzipLayer runs write once into a gzip stream and returns the layer it makes.
func newGzipLayer(write func(io.Writer) error) (v1.Layer, error) {
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	tarSum := sha256.New()
	if err := write(io.MultiWriter(tarSum, zw)); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	l := &gzipLayer{gz: gz.Bytes(), diffID: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(tarSum.Sum(nil))}}
	sum := sha256.Sum256(l.gz)
	l.digest = v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
	return partial.CompressedToLayer(l)
}

func (l *gzipLayer) Digest() (v1.Hash, error)            { return l.digest, nil }
func (l *gzipLayer) DiffID() (v1.Hash, error)            { return l.diffID, nil }
func (l *gzipLayer) Size() (int64, error)                { return int64(len(l.gz)), nil }
func (l *gzipLayer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }
func (l *gzipLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(l.gz)), nil
}
