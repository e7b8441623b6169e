package restoreseed

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/crypto/bcrypt"

	"github.com/etcd-operator/etcd-operator/internal/kvhash"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// checkAuth fails with AuthFailed when the operators could not reach a cluster running on the
// restored data file db with the credentials the cluster is given (authDir: its spec.auth
// Secret mounted, keys username and password; "" for a cluster without spec.auth). etcd takes
// its users and whether authentication is on from the backup, not from the cluster's spec: a
// backup taken with another root password would otherwise start, refuse every check, and end
// the restore as a Timeout long after the old cluster was deleted.
func checkAuth(db, authDir string) error {
	st, err := kvhash.Auth(db)
	if err != nil {
		return reason.Errorf(etcdv1beta2.ReasonBackupCorrupt, "%w", err)
	}
	if authDir == "" {
		if st.Enabled {
			return reason.Errorf(etcdv1beta2.ReasonAuthFailed, "the backup has etcd authentication enabled (users %s), and the cluster has no spec.auth: the operators could not reach the restored members. Set spec.auth.secretName to a Secret with the backup's root password", userNames(st))
		}
		return nil
	}
	user, err := readSecretKey(authDir, "username")
	if errors.Is(err, fs.ErrNotExist) {
		user, err = "root", nil
	}
	if err != nil {
		return err
	}
	password, err := readSecretKey(authDir, "password")
	if err != nil {
		return reason.Errorf(etcdv1beta2.ReasonSecretNotFound, "the cluster's auth Secret: %w", err)
	}
	u, ok := st.Users[user]
	switch {
	case !ok && st.Enabled:
		return reason.Errorf(etcdv1beta2.ReasonAuthFailed, "the backup has etcd authentication enabled, and no user %s (the user of the cluster's auth Secret); its users: %s", user, userNames(st))
	case !ok:
		return nil // the etcd operator adds the user and turns authentication on
	case u.Options != nil && u.Options.NoPassword:
		return reason.Errorf(etcdv1beta2.ReasonAuthFailed, "the backup's user %s has no password (it authenticates by certificate only), and the cluster's auth Secret gives one", user)
	}
	if err := bcrypt.CompareHashAndPassword(u.Password, []byte(password)); err != nil {
		state := "enabled"
		if !st.Enabled {
			state = "not enabled yet"
		}
		return reason.Errorf(etcdv1beta2.ReasonAuthFailed, "the backup's user %s has another password than the cluster's auth Secret (authentication %s in the backup): put the password the backed-up cluster used into the Secret, or restore a backup taken with this one", user, state)
	}
	return nil
}

// readSecretKey reads key of the Secret mounted at dir, without a trailing newline.
func readSecretKey(dir, key string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, key))
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

func userNames(st *kvhash.AuthStore) string {
	if len(st.Users) == 0 {
		return "none"
	}
	names := make([]string, 0, len(st.Users))
	for n := range st.Users {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
