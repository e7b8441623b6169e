package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/etcd-operator/etcd-operator/pkg/backend"
)

// List implements backend.Backend. It walks the directories the prefix can reach, skips
// uploads in progress, and sorts the result by key (a directory walk is not in key order:
// "a.x" sorts before "a/b").
func (b *Backend) List(ctx context.Context, prefix string) ([]backend.ObjectInfo, error) {
	infos := []backend.ObjectInfo{}
	start := b.root
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		start = filepath.Join(b.root, filepath.FromSlash(prefix[:i]))
	}
	err := filepath.WalkDir(start, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(notFound(err), backend.ErrNotFound) {
				return nil // removed while walking, or no such directory at all
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(b.root, path)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if d.IsDir() {
			if path == b.root || canMatch(key+"/", prefix) {
				return nil
			}
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), tmpPrefix) || !strings.HasPrefix(key, prefix) {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		infos = append(infos, backend.ObjectInfo{Key: key, Size: info.Size(), ModTime: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("local: listing %q: %w", prefix, err)
	}
	backend.SortObjects(infos)
	return infos, nil
}

// canMatch reports whether keys in directory dir ("a/b/") can start with prefix.
func canMatch(dir, prefix string) bool {
	return strings.HasPrefix(dir, prefix) || strings.HasPrefix(prefix, dir)
}

// Delete implements backend.Backend. It also removes directories the deletion left empty, up to
// the root, so listings and the volume stay tidy.
func (b *Backend) Delete(ctx context.Context, key string) error {
	path, err := b.path(key)
	if err != nil {
		return fmt.Errorf("local: deleting %q: %w", key, err)
	}
	if st, err := os.Lstat(path); err == nil && st.IsDir() {
		return nil // a directory is not an object: nothing to delete
	}
	if err := os.Remove(path); err != nil {
		if errors.Is(notFound(err), backend.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("local: deleting %q: %w", key, err)
	}
	for dir := filepath.Dir(path); dir != b.root && strings.HasPrefix(dir, b.root); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			break // not empty, or in use by a concurrent Put
		}
	}
	return nil
}
