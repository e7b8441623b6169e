package kubectletcd

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/storage"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/backend"
	"github.com/etcd-operator/etcd-operator/pkg/snapshot"
)

// backups lists the backup objects in the bucket of a cluster's schedule or of a given
// EtcdBackup: `kubectl etcd backups <cluster>`.
func (a *App) backups(ctx context.Context, args []string) error {
	fs := a.flagSet("backups")
	schedule := fs.String("schedule", "", "list under this EtcdBackupSchedule's storage path (default: the cluster's only schedule)")
	backupName := fs.String("backup", "", "list under this EtcdBackup's storage path instead of a schedule's")
	ambient := fs.Bool("ambient-credentials", false, "for a storage block without a credentials Secret, use this machine's cloud credentials")
	pos, err := a.parse(fs, args, 1, "backups <cluster>")
	if err != nil {
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
	store, err := storage.Open(ctx, loc, storage.APISecrets{Reader: c, Namespace: r.cluster.Namespace}, policy)
	if err != nil {
		return fmt.Errorf("opening the storage of %s: %w", from, err)
	}
	defer func() { _ = store.Close() }()
	objs, err := store.List(ctx, loc.Key)
	if err != nil {
		return fmt.Errorf("listing %s (storage of %s): %w", loc.URL(), from, err)
	}
	fmt.Fprintf(a.Out, "%s (storage of %s), %d objects:\n", loc.URL(), from, len(objs))
	writeObjects(a.Out, objs, loc.Key, clusterIdentity(r.cluster), a.Now())
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

// writeObjects prints one row per object under prefix, newest backup last as the store sorts
// them, marking the backups of cluster self.
func writeObjects(w io.Writer, objs []backend.ObjectInfo, prefix string, self snapshot.Identity, now time.Time) {
	tw := table(w)
	fmt.Fprintln(tw, "  \tTAKEN\tAGE\tREVISION\tSIZE\tCLUSTER\tKEY")
	mine := 0
	for _, o := range objs {
		p, info, ok := snapshot.SplitKey(o.Key)
		switch {
		case !ok:
			fmt.Fprintf(tw, "  ?\t-\t-\t-\t%s\tnot a backup key\t%s\n", byteSize(o.Size), o.Key)
			continue
		case p != prefix:
			fmt.Fprintf(tw, "  ?\t%s\t%s\t%d\t%s\tunder prefix %s\t%s\n", info.Time.Format(time.RFC3339), duration.HumanDuration(now.Sub(info.Time)), info.Revision, byteSize(o.Size), p, o.Key)
			continue
		}
		mark, who := "!", "OTHER: "+info.Describe()
		switch {
		case info.Same(self):
			mark, who = "*", info.Describe()
			mine++
		case !info.Tagged():
			mark, who = "?", info.Describe()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\t%s\n", mark, info.Time.Format(time.RFC3339), duration.HumanDuration(now.Sub(info.Time)), info.Revision, byteSize(o.Size), who, o.Key)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "* = a backup of %s/%s (%d); ! = another cluster's; ? = a legacy key without identity, another prefix, or not a backup\n", self.Namespace, self.Cluster, mine)
}
