package kubectletcd

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// related is an EtcdCluster and the objects of its namespace that back it up.
type related struct {
	cluster   *etcdv1beta2.EtcdCluster
	schedules []etcdv1beta2.EtcdBackupSchedule
	backups   []etcdv1beta2.EtcdBackup
}

// connect opens the API client and reads cluster name of the current namespace with its related
// objects (getRelated): what every command about one cluster starts with.
func (a *App) connect(ctx context.Context, name string) (client.Client, *related, error) {
	c, ns, err := a.kube.client()
	if err != nil {
		return nil, nil, err
	}
	r, err := getRelated(ctx, c, ns, name)
	if err != nil {
		return nil, nil, err
	}
	return c, r, nil
}

// getRelated reads cluster ns/name, the EtcdBackupSchedules whose template names it, and the
// EtcdBackups whose spec names it (etcdCluster; backups of etcdEndpoints are not attributed).
func getRelated(ctx context.Context, c client.Reader, ns, name string) (*related, error) {
	r := &related{cluster: &etcdv1beta2.EtcdCluster{}}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, r.cluster); err != nil {
		return nil, fmt.Errorf("getting EtcdCluster %s/%s: %w", ns, name, err)
	}
	var schedules etcdv1beta2.EtcdBackupScheduleList
	if err := c.List(ctx, &schedules, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing EtcdBackupSchedules in %s: %w", ns, err)
	}
	for _, s := range schedules.Items {
		if ref := s.Spec.BackupTemplate.Spec.EtcdCluster; ref != nil && ref.Name == name {
			r.schedules = append(r.schedules, s)
		}
	}
	var backups etcdv1beta2.EtcdBackupList
	if err := c.List(ctx, &backups, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing EtcdBackups in %s: %w", ns, err)
	}
	for _, b := range backups.Items {
		if ref := b.Spec.EtcdCluster; ref != nil && ref.Name == name {
			r.backups = append(r.backups, b)
		}
	}
	slices.SortFunc(r.schedules, func(a, b etcdv1beta2.EtcdBackupSchedule) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(r.backups, func(a, b etcdv1beta2.EtcdBackup) int { return strings.Compare(a.Name, b.Name) })
	return r, nil
}

// schedule picks the schedule named name among r's, or the only one when name is empty.
func (r *related) schedule(name string) (*etcdv1beta2.EtcdBackupSchedule, error) {
	c := r.cluster
	if name != "" {
		for i := range r.schedules {
			if r.schedules[i].Name == name {
				return &r.schedules[i], nil
			}
		}
		return nil, fmt.Errorf("no EtcdBackupSchedule %s/%s backs up cluster %s", c.Namespace, name, c.Name)
	}
	switch len(r.schedules) {
	case 0:
		return nil, fmt.Errorf("no EtcdBackupSchedule in %s backs up cluster %s (spec.backupTemplate.spec.etcdCluster.name)", c.Namespace, c.Name)
	case 1:
		return &r.schedules[0], nil
	}
	names := make([]string, len(r.schedules))
	for i, s := range r.schedules {
		names[i] = s.Name
	}
	return nil, fmt.Errorf("cluster %s/%s has %d schedules (%s): choose one with --schedule", c.Namespace, c.Name, len(names), strings.Join(names, ", "))
}
