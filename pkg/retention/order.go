package retention

import (
	"cmp"
	"slices"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// MaxClockSkew is how far in the future a key's time may lie and still be trusted. A backup
// written by an operator whose clock ran ahead would otherwise stay "newest" (and so be kept,
// and restored by backupSelection Newest) until the clock caught up with it.
const MaxClockSkew = 5 * time.Minute

// Backup is one of our backup objects.
type Backup struct {
	Key string
	snapshot.KeyInfo
	// ModTime is when the store says the object was written; zero if unknown.
	ModTime time.Time
	// Order is the time the backup sorts and ages by: the key's time or, when that lies more
	// than MaxClockSkew after now, the earlier of the key's time and ModTime (the zero time,
	// so the oldest of all, when the store reported none).
	Order time.Time
}

// Parse returns the backups among infos written under prefix, newest first, ordered at the
// current time (see ParseAt). Other objects are left out.
func Parse(prefix string, infos []backend.ObjectInfo) []Backup {
	return ParseAt(prefix, infos, time.Now())
}

// ParseAt returns the backups among infos written under prefix, newest first by Order at now,
// then revision, then key. Other objects are left out.
func ParseAt(prefix string, infos []backend.ObjectInfo, now time.Time) []Backup {
	var out []Backup
	for _, info := range infos {
		ki, ok := snapshot.ParseKey(prefix, info.Key)
		if !ok {
			continue
		}
		b := Backup{Key: info.Key, KeyInfo: ki, ModTime: info.ModTime, Order: ki.Time}
		if ki.Time.After(now.Add(MaxClockSkew)) && !info.ModTime.After(ki.Time) {
			b.Order = info.ModTime
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b Backup) int {
		if c := b.Order.Compare(a.Order); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Revision, a.Revision); c != 0 {
			return c
		}
		return cmp.Compare(b.Key, a.Key)
	})
	return out
}

// Newest returns the newest backup under prefix whose identity match accepts, for a restore
// running in the Kubernetes cluster kube ("" unknown): among the matching backups, the newest
// that PreferKube leaves (ambiguous: none, and kubes names the Kubernetes clusters that wrote
// them). When none matches and no tagged backup at all is under the prefix, it returns the
// newest legacy backup (a prefix used before keys carried identities). ok is false when there
// is nothing to return; others then lists the identities of the tagged backups found (the
// clusters they belong to).
func Newest(prefix string, infos []backend.ObjectInfo, now time.Time, kube string, match func(snapshot.Identity) bool) (b Backup, others []snapshot.Identity, kubes []string, ok bool) {
	var legacy *Backup
	var matching []Backup
	for _, x := range ParseAt(prefix, infos, now) {
		switch {
		case x.Tagged() && match(x.Identity):
			matching = append(matching, x)
		case x.Tagged():
			others = appendIdentity(others, x.Identity)
		case legacy == nil:
			legacy = &x
		}
	}
	if len(matching) > 0 {
		picked, kubes := PreferKube(matching, kube)
		if len(picked) == 0 {
			return Backup{}, nil, kubes, false
		}
		return picked[0], nil, nil, true
	}
	if legacy != nil && len(others) == 0 {
		return *legacy, nil, nil, true
	}
	return Backup{}, others, nil, false
}
