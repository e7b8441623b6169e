// Package v1beta2 holds the etcd.database.coreos.com/v1beta2 API: EtcdCluster, EtcdBackup,
// EtcdRestore (field-compatible with coreos/etcd-operator v0.9.4) and EtcdBackupSchedule.
//
// Files named *_types.go hold the schema and its markers; *_funcs.go hold methods.
//
// +kubebuilder:object:generate=true
// +groupName=etcd.database.coreos.com
package v1beta2
