package pgrun

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/files"
)

// The owner file names the run an instance belongs to: its PID and its
// start time in clock ticks since boot (/proc/PID/stat's field 22), so a
// PID used again by another process is not taken for the run.
const ownerFile = "owner"

func writeOwner(dir string) error {
	pid := os.Getpid()
	start, err := startTime(pid)
	if err != nil {
		return fmt.Errorf("pgrun: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, ownerFile), fmt.Appendf(nil, "%d %d\n", pid, start), 0o644)
}

// startTime is a process's start time from /proc/PID/stat.
func startTime(pid int) (uint64, error) {
	b, err := files.ReadCapped(fmt.Sprintf("/proc/%d/stat", pid), 4096)
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return strconv.ParseUint(f[19], 10, 64) // field 22 of the whole line
}

// ownerAlive says whether the run that wrote dir's owner file still runs.
// A directory without one is taken as alive while younger than a minute
// (a run between creating it and writing the file).
func ownerAlive(dir string) bool {
	b, err := files.ReadCapped(filepath.Join(dir, ownerFile), 256)
	if err != nil {
		st, err := os.Stat(dir)
		return err == nil && time.Since(st.ModTime()) < time.Minute
	}
	var pid int
	var start uint64
	if _, err := fmt.Sscan(string(b), &pid, &start); err != nil || pid <= 0 {
		return false
	}
	now, err := startTime(pid)
	return err == nil && now == start
}

// Sweep stops every private instance left by a run that no longer runs
// (killed outright: its server got SIGQUIT, but may still be shutting
// down, or have been stopped otherwise) and removes its directory. It
// returns one line per instance it found, for the run to say.
func Sweep() []string {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), Prefix+"*"))
	var said []string
	for _, dir := range dirs {
		st, err := os.Lstat(dir)
		if err != nil || !st.IsDir() || ownerAlive(dir) {
			continue
		}
		what := "its server had already stopped"
		if pid := postmaster(dir); pid > 0 {
			what = fmt.Sprintf("stopped its server (pid %d)", pid)
			stopPID(pid)
		}
		if err := os.RemoveAll(dir); err != nil {
			said = append(said, fmt.Sprintf("a private PostgreSQL left by a run that was killed: %s, %s; could not remove it: %v", dir, what, err))
			continue
		}
		said = append(said, fmt.Sprintf("a private PostgreSQL left by a run that was killed: %s; %s and removed it", dir, what))
	}
	return said
}

// postmaster is the PID in dir's data/postmaster.pid when that process
// is still a postgres serving that very directory, else 0.
func postmaster(dir string) int {
	data := filepath.Join(dir, "data")
	b, err := files.ReadCapped(filepath.Join(data, "postmaster.pid"), 4096)
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0
	}
	cmdline, err := files.ReadCapped(fmt.Sprintf("/proc/%d/cmdline", pid), 64<<10)
	if err != nil {
		return 0
	}
	args := strings.Split(string(cmdline), "\x00")
	if filepath.Base(args[0]) != "postgres" || !strings.Contains(string(cmdline), "\x00"+data+"\x00") {
		return 0
	}
	return pid
}

// stopPID stops a postmaster that is not the run's child: SIGQUIT
// (immediate shutdown), SIGKILL after 5 s, and waits for it to be gone.
func stopPID(pid int) {
	gone := func() bool {
		b, err := files.ReadCapped(fmt.Sprintf("/proc/%d/stat", pid), 4096)
		if err != nil {
			return true
		}
		i := bytes.LastIndexByte(b, ')')
		return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
	}
	for _, sig := range []syscall.Signal{syscall.SIGQUIT, syscall.SIGKILL} {
		if syscall.Kill(pid, sig) != nil {
			return
		}
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if gone() {
				return
			}
		}
	}
}
