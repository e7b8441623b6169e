package v1beta2

// IsPeriodic reports whether the backup runs every backupPolicy.backupIntervalInSecond.
func (s *BackupSpec) IsPeriodic() bool {
	return s.BackupPolicy != nil && s.BackupPolicy.BackupIntervalInSecond > 0
}

// IsFinished reports whether a one-shot backup has reached a terminal state.
func (b *EtcdBackup) IsFinished() bool {
	return b.Status.Phase == BackupPhaseCompleted || b.Status.Phase == BackupPhaseFailed
}

// IsPrefixPath reports whether the storage path's key is a prefix to which each backup adds its
// time and revision: for periodic backups and those with pathType Prefix.
func (s *BackupSpec) IsPrefixPath() bool {
	return s.IsPeriodic() || s.PathType == BackupPathPrefix
}

// StoragePath returns the path of the storage block storageType names, or "" if it is missing.
func (s *BackupSpec) StoragePath() string {
	switch s.StorageType {
	case BackupStorageTypeS3:
		if s.S3 != nil {
			return s.S3.Path
		}
	case BackupStorageTypeABS:
		if s.ABS != nil {
			return s.ABS.Path
		}
	case BackupStorageTypeGCS:
		if s.GCS != nil {
			return s.GCS.Path
		}
	case BackupStorageTypeOSS:
		if s.OSS != nil {
			return s.OSS.Path
		}
	case BackupStorageTypePVC:
		if s.PVC != nil {
			return s.PVC.ClaimName + "/" + s.PVC.Path
		}
	}
	return ""
}
