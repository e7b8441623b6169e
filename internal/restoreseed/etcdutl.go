package restoreseed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// run runs etcdutl; its output is part of the error when it fails.
func run(ctx context.Context, etcdutl string, args ...string) error {
	_, err := output(ctx, etcdutl, args...)
	return err
}

func output(ctx context.Context, etcdutl string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, etcdutl, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", etcdutl, strings.Join(args[:min(2, len(args))], " "), err, truncate(strings.TrimSpace(stderr.String()), 1000))
	}
	return stdout.Bytes(), nil
}

// snapshotStatusJSON is `etcdutl snapshot status -w json`.
type snapshotStatusJSON struct {
	Hash      uint32 `json:"hash"`
	Revision  int64  `json:"revision"`
	TotalKey  int64  `json:"totalKey"`
	TotalSize int64  `json:"totalSize"`
}

// snapshotStatus reads the revision and key count of a snapshot file; a file etcdutl cannot
// read is not a usable backup.
func snapshotStatus(ctx context.Context, etcdutl, file string) (*snapshotStatusJSON, error) {
	out, err := output(ctx, etcdutl, "snapshot", "status", file, "-w", "json")
	if err != nil {
		return nil, reason.Errorf(etcdv1beta2.ReasonBackupCorrupt, "etcdutl snapshot status: %w", err)
	}
	st := &snapshotStatusJSON{}
	if err := json.Unmarshal(out, st); err != nil {
		return nil, reason.Errorf(etcdv1beta2.ReasonBackupCorrupt, "etcdutl snapshot status printed %q: %w", truncate(string(out), 200), err)
	}
	return st, nil
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
