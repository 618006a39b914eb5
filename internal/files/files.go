// Package files is how the kit writes the files another process or a later
// reader relies on: whole or not at all. WriteAtomic writes a temporary file
// beside the destination, syncs nothing (a crash loses the file, never half
// of it), and renames it into place, so a reader sees the old file or the
// new one, never a part.
package files

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// WriteAtomic writes data to path through a temporary file in the same
// directory renamed into place; the temporary file is removed on failure.
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("files: %w", err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(f.Name(), perm)); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("files: writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("files: %w", err)
	}
	return nil
}
