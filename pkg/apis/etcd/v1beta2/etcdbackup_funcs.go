package v1beta2

// IsPeriodic reports whether the backup runs every backupPolicy.backupIntervalInSecond.
func (s *BackupSpec) IsPeriodic() bool {
	return s.BackupPolicy != nil && s.BackupPolicy.BackupIntervalInSecond > 0
}

// IsFinished reports whether a one-shot backup has reached a terminal state.
func (b *EtcdBackup) IsFinished() bool {
	return b.Status.Phase == BackupPhaseCompleted || b.Status.Phase == BackupPhaseFailed
}
