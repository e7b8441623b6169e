package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
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
	layerTar, err := buildLayer(files, o.dirs, extra)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
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
