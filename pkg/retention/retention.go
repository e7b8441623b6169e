// Package retention decides which backup objects under a prefix to delete and deletes them.
//
// It only ever considers keys that snapshot.ParseKey recognises under the exact prefix (objects
// this project wrote), and among those only the backups of one cluster: several clusters may
// share a prefix, and one cluster's retention never deletes another's backups. It orders
// backups by time (see Order) and revision, never by string order, and never deletes the
// cluster's newest backup nor the key the caller protects (the backup just written).
package retention

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// Policy says which backups to keep. Zero fields do not limit.
type Policy struct {
	// MaxBackups keeps at most this many backups, the newest.
	MaxBackups int
	// MaxAge deletes backups taken longer than this ago.
	MaxAge time.Duration
}

// IsZero reports whether the policy keeps everything.
func (p Policy) IsZero() bool { return p.MaxBackups <= 0 && p.MaxAge <= 0 }

// Request says whose backups under which prefix a policy applies to.
type Request struct {
	// Prefix is the key prefix the backups were written under.
	Prefix string
	// Owner is the cluster whose backups are considered (the one that wrote the new backup).
	// Backups of other clusters are never deleted; legacy backups (keys without an identity)
	// only while no other cluster's tagged backup shares the prefix.
	Owner snapshot.Identity
	// Kube is the Kubernetes cluster the owner's backup was written in (snapshot.KeyInfo.Kube;
	// "" unknown). The owner's name in another Kubernetes cluster is another cluster: its
	// backups are never deleted, and while any share the prefix, the owner's backups without a
	// Kubernetes identity are kept (Unattributed).
	Kube string
	// Protect is a key that is never deleted (the backup just written).
	Protect string
	Policy  Policy
	// Now is the time ages and clock skew are measured against.
	Now time.Time
}

// Decision is what Select decided.
type Decision struct {
	// Delete are the keys to delete, newest first.
	Delete []string
	// LegacyKept are legacy keys left alone because backups of other clusters share the prefix:
	// which cluster they belong to cannot be told.
	LegacyKept []string
	// Unattributed are backups of the owner's namespace and name without a Kubernetes cluster
	// identity, left alone because the same name's backups from another Kubernetes cluster share
	// the prefix: which Kubernetes cluster wrote them cannot be told.
	Unattributed []string
	// Others are the identities of the other clusters with backups under the prefix (the
	// owner's name in another Kubernetes cluster among them).
	Others []snapshot.Identity
	// OtherKubes are the Kubernetes clusters other than the owner's whose backups of the
	// owner's namespace and name share the prefix.
	OtherKubes []string
}

// Select returns what to delete among infos (a listing of req.Prefix): the owner's backups
// beyond MaxBackups or older than MaxAge, except the owner's newest and the protected key.
// Legacy backups count as the owner's when no other cluster's tagged backup is under the
// prefix (a prefix one cluster used before keys carried identities); otherwise they are kept.
func Select(req Request, infos []backend.ObjectInfo) Decision {
	var d Decision
	if req.Policy.IsZero() {
		return d
	}
	all := ParseAt(req.Prefix, infos, req.Now)
	var same []Backup
	for _, b := range all {
		if b.Tagged() && req.Owner.Same(b.Identity) {
			same = append(same, b)
		}
	}
	d.OtherKubes = otherKubes(same, req.Kube)
	foreign := len(d.OtherKubes) > 0
	var own, legacy []Backup
	for _, b := range all {
		switch {
		case b.Tagged() && req.Owner.Same(b.Identity) && ownKube(b, req.Kube, foreign):
			own = append(own, b)
		case b.Tagged() && req.Owner.Same(b.Identity) && b.Kube == "":
			d.Unattributed = append(d.Unattributed, b.Key)
		case b.Tagged():
			d.Others = appendIdentity(d.Others, b.Identity)
		default:
			legacy = append(legacy, b)
		}
	}
	candidates := own
	if len(d.Others) == 0 {
		candidates = all // own and legacy backups, in order
	} else {
		for _, b := range legacy {
			d.LegacyKept = append(d.LegacyKept, b.Key)
		}
	}
	var ownNewest string
	if len(own) > 0 {
		ownNewest = own[0].Key
	}
	for i, b := range candidates {
		if i == 0 || b.Key == ownNewest || b.Key == req.Protect {
			continue
		}
		tooMany := req.Policy.MaxBackups > 0 && i >= req.Policy.MaxBackups
		tooOld := req.Policy.MaxAge > 0 && req.Now.Sub(b.Order) > req.Policy.MaxAge
		if tooMany || tooOld {
			d.Delete = append(d.Delete, b.Key)
		}
	}
	return d
}

// appendIdentity appends id unless an equal identity is already in ids.
func appendIdentity(ids []snapshot.Identity, id snapshot.Identity) []snapshot.Identity {
	for _, x := range ids {
		if x == id {
			return ids
		}
	}
	return append(ids, id)
}

// Outcome is what Apply did.
type Outcome struct {
	Decision
	// Deleted are the keys deleted.
	Deleted []string
}

// Apply lists the objects under req.Prefix in b (every page), and deletes what Select picks.
// On delete errors it keeps going and returns them joined.
func Apply(ctx context.Context, b backend.Backend, req Request) (Outcome, error) {
	if req.Policy.IsZero() {
		return Outcome{}, nil
	}
	infos, err := b.List(ctx, req.Prefix)
	if err != nil {
		return Outcome{}, fmt.Errorf("listing backups under %q: %w", req.Prefix, err)
	}
	out := Outcome{Decision: Select(req, infos)}
	var errs []error
	for _, key := range out.Delete {
		if err := b.Delete(ctx, key); err != nil {
			errs = append(errs, fmt.Errorf("deleting old backup %q: %w", key, err))
			continue
		}
		out.Deleted = append(out.Deleted, key)
	}
	return out, errors.Join(errs...)
}
