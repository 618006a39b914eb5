package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// The recording's directory: where the JVM reads the kit's settings and
// writes its recording, made so that nothing the JVM's user puts there
// leads the kit to write or read elsewhere.

// recordingDir is where the JVM reads the settings and writes the
// recording: a directory of the kit's, owned by the JVM's user, seen by
// the kit at host and by the JVM at jvm (in its own mount namespace: a
// container's /tmp).
type recordingDir struct {
	host, jvm string
	uid, gid  uint32 // the JVM's user: the digest runs as it
}

func newRecordingDir(pid int) (*recordingDir, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d", pid), &st); err != nil {
		return nil, fmt.Errorf("watch: pid %d: %v: the process ended, or this is a container without its /proc", pid, err)
	}
	base, jvmBase := os.TempDir(), os.TempDir()
	self, _ := os.Readlink("/proc/self/ns/mnt")
	if theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil && theirs != self {
		if os.Geteuid() == 0 && st.Uid != 0 {
			// Through /proc/PID/root a link the container's user made
			// resolves against this machine's root: a directory made
			// there as root could land anywhere on the host.
			return nil, fmt.Errorf("watch: pid %d is in a container of another user's: the kit, as root, makes no directory in it (Flight Recorder not asked)", pid)
		}
		base, jvmBase = fmt.Sprintf("/proc/%d/root/tmp", pid), "/tmp" // a container: its own /tmp
	}
	host, err := os.MkdirTemp(base, "bystander-jfr-")
	if err != nil {
		return nil, fmt.Errorf("watch: no directory for Flight Recorder's recording: %v", err)
	}
	d := &recordingDir{host: host, jvm: filepath.Join(jvmBase, filepath.Base(host)), uid: st.Uid, gid: st.Gid}
	if os.Geteuid() == 0 && st.Uid != 0 {
		// The JVM writes the recording as its user, into a directory of
		// its own; the kit reads it as that user too (the digest).
		if err := os.Chown(host, int(st.Uid), int(st.Gid)); err != nil {
			os.RemoveAll(host)
			return nil, fmt.Errorf("watch: the recording's directory cannot be given to pid %d's user: %v", pid, err)
		}
	}
	return d, nil
}

func (d *recordingDir) inJVM(name string) string { return filepath.Join(d.jvm, name) }

// write makes a new file in the directory: never one already there, nor
// through a link (the directory is the JVM's user's, who could have put
// one there pointing anywhere the kit may write).
func (d *recordingDir) write(name string, b []byte) error {
	f, err := os.OpenFile(filepath.Join(d.host, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err == nil {
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("watch: Flight Recorder's settings not written: %v", err)
	}
	return nil
}

// recording is the recording's path, once it is a regular file of at
// most MaxRecording bytes (the JVM's user could put anything there).
func (d *recordingDir) recording(name string) (string, error) {
	p := filepath.Join(d.host, name)
	st, err := os.Lstat(p)
	switch {
	case err != nil:
		return "", fmt.Errorf("watch: Flight Recorder's recording is missing: %v", err)
	case !st.Mode().IsRegular():
		return "", fmt.Errorf("watch: Flight Recorder's recording %s is not a regular file: not read", p)
	case st.Size() > MaxRecording:
		return "", fmt.Errorf("watch: Flight Recorder's recording is %d MiB, more than the %d MiB read: a shorter window, or a higher threshold", st.Size()>>20, MaxRecording>>20)
	}
	return p, nil
}

func (d *recordingDir) remove() { os.RemoveAll(d.host) }
