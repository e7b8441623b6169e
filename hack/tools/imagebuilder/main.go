// Command imagebuilder builds a container image made of static binaries and nothing else, for one
// or more platforms, and writes it as a docker archive (one platform; `ctr images import` and
// `docker load` take it), as an OCI image layout archive holding an image index (any number of
// platforms; `ctr images import` takes it), or pushes the index to a registry. No base image is
// pulled: every image starts from go-containerregistry's empty image.
//
//	imagebuilder -out etcd.tar -tag quay.io/coreos/etcd:v3.6.16 \
//	  -file .cache/bin/etcd-v3.6.16/etcd=/usr/local/bin/etcd -entrypoint /usr/local/bin/etcd
//
//	imagebuilder -platform linux/amd64,linux/arm64 -format oci -out operator.tar -tag etcd-operator:dev \
//	  -file 'bin/{os}_{arch}/etcd-operator=/usr/local/bin/etcd-operator' -ca-roots /etc/ssl/certs/ca-certificates.crt
//
//	imagebuilder ... -push registry.example.com/etcd-operator:v0.2.0
//
// In -file sources {os} and {arch} are replaced by each platform's. -ca-roots writes the public
// CA roots of golang.org/x/crypto/x509roots/fallback (Mozilla's, as the Go project ships them)
// as one PEM bundle, so that non-Go tools in the image find roots where Debian puts them.
//
// Layers are reproducible (fixed timestamps and owners, sorted entries), so the same inputs give
// the same digests; it prints "id=<config digest of the first platform> digest=<digest>", the
// digest being the image's (docker archive) or the index's (OCI archive, push).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

// epoch is the modification time of every entry and, without -created, the image's creation time.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type options struct {
	out        string
	format     string
	push       string
	insecure   bool
	platforms  string
	tags       listFlag
	files      listFlag
	dirs       listFlag
	entrypoint listFlag
	env        listFlag
	labels     listFlag
	caRoots    string
	user       string
	workdir    string
	created    string
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "", "archive to write")
	flag.StringVar(&o.format, "format", "docker", "archive format: docker (one platform) or oci (an image index)")
	flag.StringVar(&o.push, "push", "", "push the image index to this reference (registry/repository:tag)")
	flag.BoolVar(&o.insecure, "insecure", false, "push over plain HTTP (implied for localhost, loopback and private addresses)")
	flag.StringVar(&o.platforms, "platform", "linux/amd64", "comma-separated os/arch list")
	flag.Var(&o.tags, "tag", "image reference the archive names (repeatable; at least one with -out)")
	flag.Var(&o.files, "file", "SRC=DST: copy host file SRC ({os} and {arch} replaced) to DST, keeping its mode (repeatable)")
	flag.Var(&o.dirs, "dir", "DST[:MODE]: an empty directory, MODE octal (default 0755) (repeatable)")
	flag.Var(&o.entrypoint, "entrypoint", "one entrypoint element (repeatable, in order)")
	flag.Var(&o.env, "env", "KEY=VALUE in the image config (repeatable; PATH is set by default)")
	flag.Var(&o.labels, "label", "KEY=VALUE image label, e.g. org.opencontainers.image.version=v0.2.0 (repeatable)")
	flag.StringVar(&o.caRoots, "ca-roots", "", "write the public CA roots as a PEM bundle at this path in the image")
	flag.StringVar(&o.user, "user", "", "numeric user[:group] the image runs as (empty: root)")
	flag.StringVar(&o.workdir, "workdir", "/", "working directory")
	flag.StringVar(&o.created, "created", "", "creation time, RFC 3339 (default 2000-01-01, for reproducible digests)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuilder:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.out == "" && o.push == "" {
		return errors.New("-out or -push is required")
	}
	if o.out != "" && len(o.tags) == 0 {
		return errors.New("-out needs at least one -tag")
	}
	platforms, err := parsePlatforms(o.platforms)
	if err != nil {
		return err
	}
	created := epoch
	if o.created != "" {
		if created, err = time.Parse(time.RFC3339, o.created); err != nil {
			return fmt.Errorf("-created: %w", err)
		}
	}
	idx, imgs, err := buildIndex(o, platforms, created)
	if err != nil {
		return err
	}
	id, err := imgs[0].ConfigName()
	if err != nil {
		return err
	}
	var digest fmt.Stringer
	switch {
	case o.out != "" && o.format == "docker":
		if len(imgs) != 1 {
			return errors.New("-format docker holds one platform: use -format oci for several")
		}
		if err := writeDocker(o.out, o.tags, imgs[0]); err != nil {
			return err
		}
		if digest, err = imgs[0].Digest(); err != nil {
			return err
		}
	case o.out != "" && o.format == "oci":
		if err := writeOCI(o.out, o.tags, idx); err != nil {
			return err
		}
	case o.out != "":
		return fmt.Errorf("unknown -format %q", o.format)
	}
	if digest == nil {
		if digest, err = idx.Digest(); err != nil {
			return err
		}
	}
	if o.push != "" {
		if err := push(o.push, o.insecure, idx); err != nil {
			return err
		}
	}
	fmt.Printf("id=%s digest=%s\n", id, digest)
	return nil
}
