package kubectletcd

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/kubeid"
	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// backups lists the backup objects in the bucket of a cluster's schedule or of a given
// EtcdBackup, as a table or with -o json|yaml as an object: `kubectl etcd backups <cluster>`.
func (a *App) backups(ctx context.Context, args []string) error {
	fs := a.flagSet("backups")
	schedule := fs.String("schedule", "", "list under this EtcdBackupSchedule's storage path (default: the cluster's only schedule)")
	backupName := fs.String("backup", "", "list under this EtcdBackup's storage path instead of a schedule's")
	ambient := fs.Bool("ambient-credentials", false, "for a storage block without a credentials Secret, use this machine's cloud credentials")
	kubeName := fs.String("kubernetes-cluster-id", "", "the operators' --kubernetes-cluster-id, if they run with one (default: this Kubernetes cluster's kube-system namespace UID, as they read it)")
	output := outputFlag(fs)
	pos, err := a.parse(fs, args, 1, "backups <cluster>")
	if err != nil {
		return err
	}
	if err := a.checkOutput("backups", *output); err != nil {
		return err
	}
	c, r, err := a.connect(ctx, pos[0])
	if err != nil {
		return err
	}
	spec, from, err := storageSpec(ctx, c, r, *schedule, *backupName)
	if err != nil {
		return err
	}
	policy := storage.AmbientPolicy{}
	if *ambient {
		policy = storage.TenantIdentity
	}
	loc, err := storage.FromSpec(spec)
	if err != nil {
		return fmt.Errorf("storage of %s: %w", from, err)
	}
	store, stop, err := a.openStore(ctx, c, r.cluster.Namespace, loc, policy)
	if err != nil {
		return fmt.Errorf("opening the storage of %s: %w", from, err)
	}
	defer stop()
	defer func() { _ = store.Close() }()
	objs, err := store.List(ctx, loc.Key)
	if err != nil {
		return fmt.Errorf("listing %s (storage of %s): %w", loc.URL(), from, err)
	}
	// Which Kubernetes cluster's backups are this one's: unknown ("") when the user may not
	// read the kube-system namespace, and then every Kubernetes cluster's backups of the name
	// are shown as the cluster's, each with its Kubernetes identity.
	kube, err := kubeid.Lookup(ctx, c, *kubeName)
	if err != nil {
		return err
	}
	list := listBackups(objs, loc.URL(), from, loc.Key, clusterIdentity(r.cluster), kube)
	fmt.Fprintf(a.progress(*output), "%s (storage of %s), %d objects:\n", list.Location, list.StorageOf, len(list.Backups))
	if *output != "" {
		return writeObject(a.Out, *output, list)
	}
	writeBackups(a.Out, list, a.Now())
	return nil
}

// storageSpec is the spec whose storage to list: an EtcdBackup's if named, else a schedule's
// template.
func storageSpec(ctx context.Context, c client.Reader, r *related, schedule, backupName string) (*etcdv1beta2.BackupSpec, string, error) {
	if backupName != "" {
		b := &etcdv1beta2.EtcdBackup{}
		key := types.NamespacedName{Namespace: r.cluster.Namespace, Name: backupName}
		if err := c.Get(ctx, key, b); err != nil {
			return nil, "", fmt.Errorf("getting EtcdBackup %s: %w", key, err)
		}
		return &b.Spec, "etcdbackup/" + b.Name, nil
	}
	s, err := r.schedule(schedule)
	if err != nil {
		return nil, "", err
	}
	return &s.Spec.BackupTemplate.Spec, "etcdbackupschedule/" + s.Name, nil
}

// clusterIdentity is the identity the backup operator writes into the keys of c's backups.
func clusterIdentity(c *etcdv1beta2.EtcdCluster) snapshot.Identity {
	id, _ := strconv.ParseUint(c.Status.ClusterID, 16, 64)
	return snapshot.Identity{Namespace: c.Namespace, Cluster: c.Name, ClusterID: id}
}

// backupList is what `backups` shows, and prints with -o json|yaml: the storage path listed and
// one entry per object in the store's order (keys sort by time, the newest backup last).
type backupList struct {
	// Location is the URL of the storage path, StorageOf whose storage block it is
	// (etcdbackupschedule/<name> or etcdbackup/<name>).
	Location  string `json:"location"`
	StorageOf string `json:"storageOf"`
	// Namespace and Cluster name the cluster whose backups are Match "this".
	Namespace string         `json:"namespace"`
	Cluster   string         `json:"cluster"`
	Backups   []backupObject `json:"backups"`
}

// How an object relates to the listed cluster (backupObject.Match).
const (
	matchThis        = "this"        // a backup of the cluster (*)
	matchOther       = "other"       // a backup of another cluster (!)
	matchLegacy      = "legacy"      // a backup key without the cluster's identity (?)
	matchOtherPrefix = "otherPrefix" // a backup key under another prefix sharing the beginning (?)
	matchNotBackup   = "notBackup"   // not a key this project writes (?)
)

// backupObject is one object under the storage path, with what its key says.
type backupObject struct {
	Key  string `json:"key"`
	Size int64  `json:"size"`
	// Match is this, other, legacy, otherPrefix or notBackup.
	Match string `json:"match"`
	// Time (when the backup was taken) and Revision come from the key; absent for notBackup.
	Time     *metav1.Time `json:"time,omitempty"`
	Revision int64        `json:"revision,omitempty"`
	// Owner is the cluster the key names; nil for legacy keys and notBackup.
	Owner *backupOwner `json:"owner,omitempty"`
	// Prefix is the key's prefix when it is not the listed one (otherPrefix).
	Prefix string `json:"prefix,omitempty"`
	// Coreos is true for a key coreos/etcd-operator's periodic backup wrote (a legacy key).
	Coreos bool `json:"coreos,omitempty"`
}

// backupOwner is the identity in a backup key.
type backupOwner struct {
	Namespace string `json:"namespace"`
	// Cluster is the EtcdCluster's name, or "-" for a backup of etcdEndpoints no cluster claimed.
	Cluster string `json:"cluster"`
	// ClusterID is the etcd cluster ID in hex, as status.clusterID.
	ClusterID string `json:"clusterID"`
	// KubernetesCluster is the identity of the Kubernetes cluster the backup was written in
	// (16 hex digits; absent from keys written without one).
	KubernetesCluster string `json:"kubernetesCluster,omitempty"`
}

// describe renders o as snapshot.Identity.Describe does, with its Kubernetes cluster.
func (o *backupOwner) describe() string {
	id, _ := strconv.ParseUint(o.ClusterID, 16, 64)
	d := snapshot.Identity{Namespace: o.Namespace, Cluster: o.Cluster, ClusterID: id}.Describe()
	if o.KubernetesCluster != "" {
		d += " in Kubernetes cluster " + o.KubernetesCluster
	}
	return d
}

// listBackups parses the keys of objs, listed under prefix at location, relative to cluster
// self in Kubernetes cluster kube ("" unknown: the name's backups of every Kubernetes cluster
// are self's).
func listBackups(objs []backend.ObjectInfo, location, from, prefix string, self snapshot.Identity, kube string) *backupList {
	l := &backupList{Location: location, StorageOf: from, Namespace: self.Namespace, Cluster: self.Cluster, Backups: []backupObject{}}
	for _, o := range objs {
		b := backupObject{Key: o.Key, Size: o.Size, Match: matchNotBackup}
		if p, info, ok := snapshot.SplitKey(o.Key); ok {
			b.Time, b.Revision, b.Coreos = &metav1.Time{Time: info.Time}, info.Revision, info.Coreos
			if info.Tagged() {
				b.Owner = &backupOwner{Namespace: info.Namespace, Cluster: info.Cluster, ClusterID: fmt.Sprintf("%016x", info.ClusterID), KubernetesCluster: info.Kube}
			}
			switch {
			case p != prefix:
				b.Match, b.Prefix = matchOtherPrefix, p
			case info.Same(self) && (kube == "" || info.Kube == "" || info.Kube == kube):
				b.Match = matchThis
			case !info.Tagged():
				b.Match = matchLegacy
			default:
				b.Match = matchOther
			}
		}
		l.Backups = append(l.Backups, b)
	}
	return l
}

// writeBackups prints one row per object of l, marking the backups of l's cluster.
func writeBackups(w io.Writer, l *backupList, now time.Time) {
	tw := table(w)
	fmt.Fprintln(tw, "  \tTAKEN\tAGE\tREVISION\tSIZE\tCLUSTER\tKEY")
	mine := 0
	for _, b := range l.Backups {
		if b.Match == matchNotBackup {
			fmt.Fprintf(tw, "  ?\t-\t-\t-\t%s\tnot a backup key\t%s\n", byteSize(b.Size), b.Key)
			continue
		}
		mark, who := "?", "legacy (no cluster identity)"
		if b.Coreos {
			who = "coreos periodic backup (no cluster identity)"
		}
		if b.Owner != nil {
			who = b.Owner.describe()
		}
		switch b.Match {
		case matchOtherPrefix:
			who = "under prefix " + b.Prefix
		case matchThis:
			mark = "*"
			mine++
		case matchOther:
			mark, who = "!", "OTHER: "+who
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\t%s\n", mark, b.Time.UTC().Format(time.RFC3339), duration.HumanDuration(now.Sub(b.Time.Time)), b.Revision, byteSize(b.Size), who, b.Key)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "* = a backup of %s/%s (%d); ! = another cluster's; ? = a legacy key without identity, another prefix, or not a backup\n", l.Namespace, l.Cluster, mine)
}
