// Package files is how the kit writes the files another process or a later
// reader relies on: whole or not at all. WriteAtomic writes a temporary file
// beside the destination, syncs nothing (a crash loses the file, never half
// of it), and renames it into place, so a reader sees the old file or the
// new one, never a part.
package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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

// CacheDir is the kit's cache directory, where it keeps what it builds or
// fetches once (the example services, echarts, the Flight Recorder
// digest): BYSTANDER_CACHE, else the user's cache directory's bystander
// (~/.cache/bystander), else, with no home, bystander-UID in the
// temporary directory. That one is shared with every user, who may make
// the name first: it is taken only as a directory of this user's alone
// (made 0700 here, or found so: not a link, owned by this user, closed to
// the group and others); otherwise a fresh directory of the process's own
// is the cache (for this process's work alone; it is left in the
// temporary directory, as any file there, for the system to clear).
func CacheDir() string {
	if d := os.Getenv("BYSTANDER_CACHE"); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err == nil {
		return filepath.Join(base, "bystander")
	}
	return tempCache()
}

var (
	tempCacheMu   sync.Mutex
	tempCacheDirs = map[string]string{} // by the temporary directory
)

// tempCache is the cache with no home (CacheDir).
func tempCache() string {
	tmp := os.TempDir()
	d := filepath.Join(tmp, fmt.Sprintf("bystander-%d", os.Getuid()))
	if err := os.Mkdir(d, 0o700); err == nil || errors.Is(err, fs.ErrExist) {
		if ownedAlone(d) {
			return d
		}
	}
	tempCacheMu.Lock()
	defer tempCacheMu.Unlock()
	if d := tempCacheDirs[tmp]; d != "" {
		return d
	}
	fresh, err := os.MkdirTemp(tmp, "bystander-cache-")
	if err != nil {
		// The temporary directory takes nothing: a cache under /dev/null
		// holds nothing and takes nothing either, so what would use it
		// builds or fetches again, and never reads a stranger's.
		return filepath.Join(os.DevNull, "bystander")
	}
	tempCacheDirs[tmp] = fresh
	return fresh
}

// ownedAlone: d is a directory (not a link) of this user's, closed to
// its group and others.
func ownedAlone(d string) bool {
	fi, err := os.Lstat(d)
	return err == nil && fi.IsDir() && NotOwn(fi, 0o077) == ""
}

// NotOwn says why fi is not the kit user's alone: another user's, or with
// a permission bit of open (group's or others') set; "" when it is.
func NotOwn(fi fs.FileInfo, open fs.FileMode) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return "has no owner to check"
	case int(st.Uid) != os.Geteuid():
		return fmt.Sprintf("belongs to uid %d, not to the kit's user (uid %d)", st.Uid, os.Geteuid())
	case fi.Mode().Perm()&open != 0:
		return fmt.Sprintf("is open to others (%v)", fi.Mode().Perm())
	}
	return ""
}

// ReadIn reads the file rel names inside dir, as a run directory names its
// files: rel must be relative, stay inside dir once cleaned and once every
// symlink is resolved, name a regular file (not a FIFO, a device or a
// directory: those are refused before they are opened, so nothing blocks),
// and hold at most limit bytes. A run directory may come from a stranger:
// anything else is refused at once, saying why.
func ReadIn(dir, rel string, limit int64) ([]byte, error) {
	f, err := OpenIn(dir, rel, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("files: %q: %w", rel, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("files: %q grew over the %d bytes a run directory's file may hold", rel, limit)
	}
	return b, nil
}

// ReadCapped reads at most max bytes of the file at path: a file of the
// machine's (/proc, a server's log) that may be larger than what is needed
// of it, read from its start and cut there, not refused.
func ReadCapped(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max))
}

// OpenIn opens the file rel names inside dir for reading, with ReadIn's
// checks (relative, inside, regular, at most limit bytes now); the caller
// reads it as a stream, and bounds what it reads.
func OpenIn(dir, rel string, limit int64) (*os.File, error) {
	switch {
	case rel == "":
		return nil, errors.New("files: an empty file name")
	case filepath.IsAbs(rel):
		return nil, fmt.Errorf("files: %q is absolute: a run directory names its files relative to itself", rel)
	}
	clean := filepath.Clean(rel)
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("files: %q leads outside the run directory", rel)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("files: %w", err)
	}
	path, err := filepath.EvalSymlinks(filepath.Join(root, clean))
	if err != nil {
		return nil, fmt.Errorf("files: %q: %w", rel, err)
	}
	if r, err := filepath.Rel(root, path); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("files: %q leads outside the run directory (to %s)", rel, path)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("files: %q: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("files: %q is not a regular file (%s)", rel, fi.Mode().Type())
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("files: %q is %d bytes, over the %d a run directory's file may hold", rel, fi.Size(), limit)
	}
	return openRegular(path, syscall.O_NOFOLLOW, fmt.Sprintf("%q", rel))
}

// openRegular opens path, which a stat has just found a regular file, for
// reading: non-blocking, so that a FIFO put in its place since the stat
// cannot block the open, and checked again once open (name says the file
// in errors).
func openRegular(path string, flags int, name string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|flags, 0)
	if err != nil {
		return nil, fmt.Errorf("files: %s: %w", name, err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("files: %s is not a regular file", name)
	}
	return f, nil
}

// ReadRegular reads the file a user named (a flag's value: their own file,
// anywhere, through symlinks): it must be a regular file (a FIFO, a device
// or a directory is refused before it is opened, so nothing blocks) of at
// most limit bytes; a larger one is refused, not cut.
func ReadRegular(path string, limit int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("files: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("files: %s is not a regular file (%s): name a file", path, kind(fi.Mode()))
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("files: %s is %d bytes, over the %d it may hold", path, fi.Size(), limit)
	}
	f, err := openRegular(path, 0, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("files: %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("files: %s grew over the %d bytes it may hold", path, limit)
	}
	return b, nil
}

// kind names a file that is not regular, for errors.
func kind(m os.FileMode) string {
	switch t := m.Type(); {
	case t&os.ModeDir != 0:
		return "a directory"
	case t&os.ModeNamedPipe != 0:
		return "a FIFO"
	case t&os.ModeSocket != 0:
		return "a socket"
	case t&os.ModeDevice != 0:
		return "a device"
	default:
		return t.String()
	}
}
