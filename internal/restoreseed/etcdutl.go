package restoreseed

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// run runs etcdutl; its output is part of the error when it fails.
func run(ctx context.Context, etcdutl string, args ...string) error {
	cmd := exec.CommandContext(ctx, etcdutl, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", etcdutl, strings.Join(args[:min(2, len(args))], " "), err, truncate(strings.TrimSpace(stderr.String()), 1000))
	}
	return nil
}

// canBump fails unless etcdutl can raise the restored revision (--bump-revision, in etcd 3.5.8
// and later and 3.6).
func canBump(ctx context.Context, etcdutl string) error {
	// --help prints the flags to stdout or stderr depending on the version; either counts.
	out, _ := exec.CommandContext(ctx, etcdutl, "snapshot", "restore", "--help").CombinedOutput()
	if !strings.Contains(string(out), "--bump-revision") {
		return reason.Errorf(etcdv1beta2.ReasonIncompatibleVersion, "this etcd's etcdutl cannot raise the restored revision (--bump-revision, etcd 3.5.8 and later): run a newer etcd, or set revisionBump: 0 to restore the backup's revisions as they were")
	}
	return nil
}
