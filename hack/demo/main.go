//go:build e2e

// Command demo is the disaster-recovery drill of `make demo` (hack/demo.sh runs it once the local
// cluster, the object stores and the operators are up): a 3-member EtcdCluster on volumes gets a
// realistic dataset, a scheduled backup into MinIO, keeps taking writes, loses every member and
// every volume, is restored from the backup by an EtcdRestore, and is verified key by key. It
// prints one line per step and a report (also written to .cache/demo/report.txt), and exits
// non-zero when anything fails or any key is wrong.
//
//	go run -tags e2e ./hack/demo [-keys 50000] [-restore-from s3|schedule]
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcd-operator/etcd-operator/internal/testutil/poll"
	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

type options struct {
	namespace, cluster, bucket, objstoresEnv, restoreFrom, reportFile string
	keys, batch, workers                                              int
	after                                                             time.Duration
	tamper, continuous                                                bool
}

func main() {
	o := options{}
	flag.StringVar(&o.namespace, "namespace", "etcd-demo", "namespace of the drill; deleted and recreated on every run")
	flag.StringVar(&o.cluster, "cluster", "demo", "name of the EtcdCluster (and of the EtcdRestore)")
	flag.StringVar(&o.bucket, "bucket", "etcd-demo", "S3 bucket on the pod-reachable MinIO; objects under demo/ are deleted at the start")
	flag.StringVar(&o.objstoresEnv, "objstores-env", os.Getenv(framework.ObjectStoresEnvVar), "env file of the pod-reachable object stores (default <repo>/.cache/objstores/pods.env)")
	flag.StringVar(&o.restoreFrom, "restore-from", envOr("DEMO_RESTORE_FROM", "s3"), "how the EtcdRestore names the backup: s3 (coreos shape: backupStorageType S3 + s3.path) or schedule (backupScheduleRef)")
	flag.StringVar(&o.reportFile, "report", "", "where to write the report (default <repo>/.cache/demo/report.txt)")
	flag.IntVar(&o.keys, "keys", 50000, "keys in the dataset")
	flag.IntVar(&o.batch, "batch", 100, "puts per transaction while loading")
	flag.IntVar(&o.workers, "workers", 8, "transactions in flight while loading")
	flag.DurationVar(&o.after, "write-after-backup", 10*time.Second, "how long the application keeps writing after the backup completed, before the disaster")
	flag.BoolVar(&o.continuous, "continuous", os.Getenv("DEMO_CONTINUOUS") == "1", "continuous capture: the schedule also captures every change (segments every 2 s), and the restore goes to the newest point captured instead of the backup")
	flag.BoolVar(&o.tamper, "tamper", false, "self-test of the verification: overwrite one restored key before checking; the demo must then FAIL")
	flag.Parse()
	if o.restoreFrom != "s3" && o.restoreFrom != "schedule" {
		fmt.Fprintf(os.Stderr, "demo: -restore-from must be s3 or schedule, not %q\n", o.restoreFrom)
		os.Exit(2)
	}
	ctx := context.Background()
	d, err := newDemo(o)
	if err == nil {
		err = d.run(ctx)
	}
	if d != nil && d.report != nil {
		if werr := d.writeReport(); werr != nil {
			fmt.Fprintf(os.Stderr, "demo: %v\n", werr)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "\ndemo: FAIL: %v\n", err)
		if d != nil {
			d.diagnose(ctx)
		}
		os.Exit(1)
	}
	if !d.report.passed() {
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// demo is one run of the drill.
type demo struct {
	o      options
	f      *framework.Framework
	stores *framework.ObjStores
	bucket *framework.Bucket
	data   *dataset
	start  time.Time
	nstep  int
	report *report
}

func newDemo(o options) (*demo, error) {
	f, err := framework.New()
	if err != nil {
		return nil, err
	}
	if o.objstoresEnv == "" {
		o.objstoresEnv = filepath.Join(f.RootDir, ".cache", "objstores", "pods.env")
	}
	if o.reportFile == "" {
		o.reportFile = filepath.Join(f.RootDir, ".cache", "demo", "report.txt")
	}
	stores, err := framework.LoadObjectStores(o.objstoresEnv)
	if err != nil {
		return nil, fmt.Errorf("pod-reachable object stores: %w (OBJSTORES_BIND=10.244.0.1 hack/objstores.sh up)", err)
	}
	return &demo{o: o, f: f, stores: stores, start: time.Now(), data: newDataset(rand.Uint64(), o.keys),
		report: &report{Namespace: o.namespace, Cluster: o.cluster, RestoreFrom: o.restoreFrom, Continuous: o.continuous}}, nil
}

// step prints a numbered step line with the time since the start, and ends the previous
// step's timing in the report.
func (d *demo) step(name, format string, args ...any) {
	d.endStep()
	d.nstep++
	d.report.Steps = append(d.report.Steps, stepTime{Name: name, start: time.Now()})
	fmt.Printf("[%6.1fs] %d. %s\n", time.Since(d.start).Seconds(), d.nstep, fmt.Sprintf(format, args...))
}

func (d *demo) endStep() {
	if n := len(d.report.Steps); n > 0 && d.report.Steps[n-1].Took == 0 {
		d.report.Steps[n-1].Took = time.Since(d.report.Steps[n-1].start)
	}
}

// info prints a progress line under the current step.
func (d *demo) info(format string, args ...any) {
	fmt.Printf("[%6.1fs]    %s\n", time.Since(d.start).Seconds(), fmt.Sprintf(format, args...))
}

func (d *demo) run(ctx context.Context) error {
	r := d.report
	d.step("reset", "reset namespace %s and bucket s3://%s/demo/", d.o.namespace, d.o.bucket)
	if err := d.reset(ctx); err != nil {
		return err
	}

	d.step("cluster", "create a 3-member EtcdCluster %s/%s on volumes (persistentVolumeClaimSpec)", d.o.namespace, d.o.cluster)
	t := time.Now()
	if err := d.createCluster(ctx); err != nil {
		return err
	}
	if err := d.waitClusterAvailable(ctx, 5*time.Minute); err != nil {
		return err
	}
	d.info("Available with 3 members in %s", since(t))

	d.step("load", "write the dataset: %d keys, values %d B to %d KiB (/registry/..., /app/...; every fifth on one of %d leases)", d.o.keys, minValue, maxValue/1024, sessionLeases)
	cli, err := d.etcdClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	t = time.Now()
	if r.DatasetBytes, err = d.data.load(ctx, cli, d.o.batch, d.o.workers); err != nil {
		return err
	}
	r.DatasetKeys, r.LoadTime = d.o.keys, time.Since(t)
	d.info("%d keys, %s in %s (%.0f keys/s)", r.DatasetKeys, mib(r.DatasetBytes), round(r.LoadTime), float64(r.DatasetKeys)/r.LoadTime.Seconds())

	// From here on the application keeps writing, a few keys every 200 ms, until the disaster.
	tctx, stopTrickle := context.WithCancel(ctx)
	defer stopTrickle()
	trickleErr := make(chan error, 1)
	go func() { trickleErr <- d.data.trickle(tctx, cli, 5, 200*time.Millisecond) }()

	d.step("backup", "scheduled backup: EtcdBackupSchedule */1 * * * * into MinIO; waiting for its first successful EtcdBackup")
	if err := d.createSchedule(ctx); err != nil {
		return err
	}
	b, err := d.waitScheduledBackup(ctx, 3*time.Minute)
	if err != nil {
		return err
	}
	r.setBackup(b)
	d.info("%s: %s, %s, revision %d, took %s", b.Name, b.Status.Location, mib(b.Status.Size), b.Status.EtcdRevision, dur(b.Status.Duration))
	if d.o.continuous {
		cs, err := d.waitCapturing(ctx, 2*time.Minute)
		if err != nil {
			return err
		}
		d.info("continuous capture: every change from revision %d on, into segments every %s", cs.StartRevision, captureInterval)
	}

	d.step("writes after backup", "the application keeps writing for %s after the backup", d.o.after)
	time.Sleep(d.o.after)
	stopTrickle()
	if err := <-trickleErr; err != nil {
		return fmt.Errorf("writes after the load: %w", err)
	}
	if r.RevisionAtDisaster, err = currentRevision(ctx, cli); err != nil {
		return err
	}
	r.TrickleKeys = d.data.total() - d.data.n
	d.info("%d keys written since the load; cluster revision %d", r.TrickleKeys, r.RevisionAtDisaster)
	_ = cli.Close()

	if !d.o.continuous {
		d.step("disaster", "DISASTER: suspend the schedule, delete every member pod and every volume (the EtcdCluster stays)")
		if err := d.suspendSchedule(ctx); err != nil {
			return err
		}
	} else {
		d.step("disaster", "DISASTER: delete every member pod and every volume (the EtcdCluster stays)")
	}
	r.DisasterTime = time.Now()
	if err := d.disaster(ctx); err != nil {
		return err
	}
	d.info("all members and volumes gone in %s", since(r.DisasterTime))
	if d.o.continuous {
		// Suspending stops the capture, which first stores its open segment (capture.Run's
		// flush): what it received before the disaster is in the bucket.
		if err := d.suspendSchedule(ctx); err != nil {
			return err
		}
	}

	d.step("restore", "restore: EtcdRestore %s/%s (%s)", d.o.namespace, d.o.cluster, d.restoreShape())
	rs, err := d.restore(ctx)
	if rs != nil {
		r.setRestore(rs)
	}
	if err != nil {
		return err
	}

	d.step("verify", "verify every key and value against the restored revision %d", r.cut())
	cli, err = d.etcdClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	// The restore verified every member at its pod; the client Service routes to a member once
	// the kubelet's readiness probe (every 5 s) passed, which can come a few seconds later.
	if err := poll.Until(ctx, 500*time.Millisecond, time.Minute, func(ctx context.Context) (bool, error) {
		_, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
		return err == nil, err
	}); err != nil {
		return fmt.Errorf("the restored cluster does not answer through its client Service: %w", err)
	}
	if d.o.tamper {
		d.info("-tamper: overwriting %s in the restored cluster; the check below must catch it", d.data.key(0))
		if _, err := cli.Put(ctx, d.data.key(0), "tampered"); err != nil {
			return err
		}
	}
	if r.Verification, err = d.data.verify(ctx, cli, r.cut()); err != nil {
		return err
	}
	r.AfterBackup, r.AfterBackupBack = d.data.after(r.BackupRevision, r.cut())
	if r.MemberKeys, err = d.memberKeyCounts(ctx); err != nil {
		return err
	}
	r.VerifiedTime = time.Now()
	d.endStep()
	r.Total = time.Since(d.start)
	d.info("checked %d keys (%d of them on their lease): %d mismatches, %d missing; %d written after the backup are gone as expected",
		r.Verification.Checked, r.Verification.Leased, r.Verification.Mismatches, r.Verification.Missing, r.Verification.Lost-r.Verification.Survivors)
	fmt.Println()
	fmt.Print(r.String())
	return nil
}

func (d *demo) restoreShape() string {
	shape := fmt.Sprintf("backupStorageType: S3, s3.path: %s", d.report.BackupPath)
	if d.o.restoreFrom == "schedule" {
		shape = "backupScheduleRef: " + scheduleName
	}
	if d.o.continuous {
		shape += ", pointInTime: {} (the newest point captured)"
	}
	return shape
}

func (d *demo) writeReport() error {
	if err := os.MkdirAll(filepath.Dir(d.o.reportFile), 0o755); err != nil {
		return err
	}
	d.endStep()
	if d.report.Total == 0 {
		d.report.Total = time.Since(d.start)
	}
	if err := os.WriteFile(d.o.reportFile, []byte(d.report.String()), 0o644); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	fmt.Printf("\nreport written to %s\n", d.o.reportFile)
	return nil
}
