package restoreboot

import (
	"time"

	"github.com/etcd-operator/etcd-operator/internal/reason"
	"github.com/etcd-operator/etcd-operator/internal/restoreseed"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Source is a backup object to restore and what it must be.
type Source struct {
	// Loc is the object and how to reach it.
	Loc storage.Location
	// Expect is the object's size and sha256; zero fields are not checked.
	Expect restoreseed.Expect
	// RevisionBump raises the restored revision this far and marks the rest compacted.
	RevisionBump int64
	// ToRevision, when positive, is the revision every member replays the capture after the
	// backup to (pointInTime, resolved: status.restore.pointInTime).
	ToRevision int64
}

// FromSpec resolves a cluster's bootstrap.restore.source. A source without a credentials
// Secret is refused (InvalidSpec): member pods have no cloud identity of the operator's, and a
// restore that could not read the backup would only fail later, in every member.
func FromSpec(s *etcdv1beta2.RestoreSource) (Source, error) {
	loc, err := storage.FromSource(s.StorageType, s.BackupSource)
	if err != nil {
		return Source{}, err
	}
	if loc.Secret == "" {
		return Source{}, reason.Errorf(etcdv1beta2.ReasonInvalidSpec, "bootstrap.restore.source names no credentials Secret for %s: the member pods that fetch the backup have no cloud identity of the operator's; name the Secret in the %s block", loc.URL(), s.StorageType)
	}
	bump := int64(etcdv1beta2.DefaultRevisionBump)
	if s.RevisionBump != nil {
		bump = *s.RevisionBump
	}
	src := Source{Loc: loc, Expect: restoreseed.Expect{Size: s.Size, SHA256: s.SHA256}, RevisionBump: bump}
	if s.PointInTime != nil {
		// A revision is its own resolution (a restore check replays to it); a time or {} is
		// resolved by the etcd operator first (pinPoint).
		src.ToRevision = s.PointInTime.Revision
	}
	return src, nil
}

// TimeoutBase is the part of a restore's deadline that does not depend on the backup's size:
// pods starting, the cluster forming, members verified.
const TimeoutBase = 20 * time.Minute

// Timeout bounds a whole restore of a backup of size bytes: long enough to move and restore a
// multi-GiB backup twice over a slow store, and for the cluster to form.
func Timeout(size int64) time.Duration {
	return TimeoutBase + 2*snapshot.DefaultTimeout(size)
}

// FromCluster is the backup every member of c restores: its source's object, or for a Newest
// source the object recorded in status.restore.selected, pinned to its size and sha256; with
// pointInTime, and the revision it was resolved to.
func FromCluster(c *etcdv1beta2.EtcdCluster) (Source, error) {
	src, err := FromSpec(c.Spec.Bootstrap.Restore.Source)
	if err != nil {
		return src, err
	}
	if !Newest(c) {
		return pinPoint(c, src)
	}
	var sel *etcdv1beta2.SelectedBackup
	if st := c.Status.Restore; st != nil {
		sel = st.Selected
	}
	if sel == nil {
		return Source{}, reason.Errorf(etcdv1beta2.ReasonRestoring, "the backup under %s is not chosen yet", src.Loc.URL())
	}
	if src.Loc, err = src.Loc.At(sel.Location); err != nil {
		return Source{}, err
	}
	src.Expect = restoreseed.Expect{Size: sel.Size, SHA256: sel.SHA256}
	return pinPoint(c, src)
}

// pinPoint sets src's replay target from the revision c's pointInTime was resolved to; nothing
// to replay (the backup is the point) leaves it unset.
func pinPoint(c *etcdv1beta2.EtcdCluster, src Source) (Source, error) {
	if c.Spec.Bootstrap.Restore.Source.PointInTime == nil {
		return src, nil
	}
	var pt *etcdv1beta2.RestoredPoint
	if st := c.Status.Restore; st != nil {
		pt = st.PointInTime
	}
	if pt == nil {
		return Source{}, reason.Errorf(etcdv1beta2.ReasonRestoring, "the point in time to restore %s to is not resolved yet", src.Loc.URL())
	}
	src.ToRevision = 0 // the backup is the point
	if pt.Revisions > 0 {
		src.ToRevision = pt.Revision
	}
	return src, nil
}

// WantRevision is the revision the restored snapshot must reach: the source's, or the chosen
// backup's as its key records it; 0 when unknown.
func WantRevision(c *etcdv1beta2.EtcdCluster) int64 {
	if Newest(c) {
		if st := c.Status.Restore; st != nil && st.Selected != nil {
			return st.Selected.Revision
		}
		return 0
	}
	return c.Spec.Bootstrap.Restore.Source.Revision
}
