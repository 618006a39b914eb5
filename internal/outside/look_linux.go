package outside

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/files"
)

// LookAt reads every thread of process pid from /proc, at most MaxThreads.
// limit, when not empty, says once what could not be read: the system
// call of another user's process, or where the kernel forbids it.
func LookAt(pid int) (l Look, limit string, err error) {
	base := fmt.Sprintf("/proc/%d", pid)
	ents, err := os.ReadDir(base + "/task")
	if err != nil {
		return Look{}, "", fmt.Errorf("outside: pid %d's threads cannot be listed (%v): the process ended, or this is a container without its /proc; nothing to judge", pid, err)
	}
	l.TimeNs = time.Now().UnixNano()
	sockets := map[string]string(nil) // socket inode -> "to ADDR", read once a look
	buf := make([]byte, 4096)
	read := func(path string) ([]byte, error) { return readSmall(path, buf) }
	for _, e := range ents {
		if len(l.Threads) == MaxThreads {
			break
		}
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := base + "/task/" + e.Name()
		th := Thread{TID: tid}
		b, err := read(dir + "/stat")
		if err != nil {
			continue // ended in between
		}
		// "TID (comm) S ...": comm may hold spaces and parentheses.
		stat := string(b)
		if i, j := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')'); i >= 0 && j > i {
			th.Comm = stat[i+1 : j]
			if f := strings.Fields(stat[j+1:]); len(f) > 0 {
				th.State = f[0]
			}
		}
		if b, err := read(dir + "/schedstat"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 {
				th.RunNs, _ = strconv.ParseInt(f[0], 10, 64)
			}
		}
		b, err = read(dir + "/syscall")
		switch {
		case err != nil:
			if limit == "" && (errors.Is(err, fs.ErrPermission) || errors.Is(err, os.ErrPermission)) {
				limit = fmt.Sprintf("what pid %d's threads are in cannot be read (%s/task/*/syscall: permission denied: "+
					"another user's process, or a kernel that forbids tracing it (Yama's ptrace_scope)); only their names and states are read (the kernel hides their waits too), so only a thread on a CPU can be told held", pid, base)
			}
		default:
			f := strings.Fields(string(b))
			switch {
			case len(f) == 0:
			case f[0] == "running":
				th.Syscall = "running"
			case f[0] == "-1":
				th.Syscall = "none"
			default:
				th.Syscall = f[0]
				if nr, err := strconv.Atoi(f[0]); err == nil && fdCall(nr) && len(f) > 1 {
					if fd, err := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 31); err == nil {
						th.FD = describeFD(base, int(fd), &sockets)
					}
				}
			}
		}
		if th.Syscall == "" || th.Syscall == "none" { // where the call says nothing, the kernel's wait does
			if b, err := read(dir + "/wchan"); err == nil && string(b) != "0" {
				th.Wchan = string(b)
			}
		}
		l.Threads = append(l.Threads, th)
	}
	return l, limit, nil
}

// readSmall reads a /proc file of at most len(buf) bytes in one read (a
// look reads a few files of every thread: os.ReadFile's extra system calls
// tripled its cost here).
func readSmall(path string, buf []byte) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	n, err := syscall.Read(fd, buf)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return buf[:max(n, 0)], nil
}

// describeFD says what descriptor fd of the process at base is.
func describeFD(base string, fd int, sockets *map[string]string) string {
	target, err := os.Readlink(fmt.Sprintf("%s/fd/%d", base, fd))
	if err != nil {
		return ""
	}
	switch {
	case strings.HasPrefix(target, "socket:["):
		if *sockets == nil {
			*sockets = tcpPeers(base)
		}
		inode := strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")
		if to, ok := (*sockets)[inode]; ok {
			return "socket " + to
		}
		return "a socket"
	case strings.HasPrefix(target, "pipe:"):
		return "a pipe"
	case strings.HasPrefix(target, "anon_inode:"):
		return strings.TrimPrefix(target, "anon_inode:")
	}
	return cut(filepath.Clean(target), maxText)
}

// tcpPeers reads the process's TCP sockets (its network namespace's
// /proc/PID/net/tcp and tcp6): inode -> "to PEER".
func tcpPeers(base string) map[string]string {
	out := map[string]string{}
	for _, name := range []string{"tcp", "tcp6"} {
		b, err := files.ReadCapped(base+"/net/"+name, maxProcFile)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 {
				continue
			}
			peer, ok := hexAddr(f[2])
			if !ok {
				continue
			}
			if f[3] == "0A" { // LISTEN
				out[f[9]] = "listening"
				continue
			}
			out[f[9]] = "to " + peer.String()
		}
	}
	return out
}

// hexAddr decodes /proc/net/tcp's "0100007F:1538": the address in 32-bit
// words of the machine's byte order (little-endian here), the port in hex.
func hexAddr(s string) (netip.AddrPort, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, false
	}
	raw, err := hex.DecodeString(a)
	port, err2 := strconv.ParseUint(p, 16, 16)
	if err != nil || err2 != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, false
	}
	for i := 0; i < len(raw); i += 4 { // each word little-endian
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), true
}
