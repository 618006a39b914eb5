package proc

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// Listens says whether process pid holds the listening TCP socket that
// accepts connections for addr (host:port, an IP address or localhost): a
// socket in LISTEN state bound to that port and to addr's IP or to every
// address (/proc/net/tcp and tcp6), which one of pid's descriptors is
// (/proc/PID/fd). An error says it could not be told: /proc not readable,
// or pid's descriptors belong to another user.
func Listens(pid int, addr string) (bool, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("proc: %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || port > 65535 {
		return false, fmt.Errorf("proc: %q: not a port", addr)
	}
	var ips []net.IP
	if host == "localhost" {
		ips = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	} else if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else {
		return false, fmt.Errorf("proc: %q: not an IP address", addr)
	}
	inodes := map[string]bool{}
	read := 0
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		socks, err := listening(table)
		if err != nil {
			continue // no IPv6 on this machine, say
		}
		read++
		for _, s := range socks {
			if s.port != port {
				continue
			}
			for _, ip := range ips {
				if s.ip.IsUnspecified() || s.ip.Equal(ip) {
					inodes[s.inode] = true
				}
			}
		}
	}
	if read == 0 {
		return false, errors.New("proc: /proc/net/tcp cannot be read")
	}
	if len(inodes) == 0 {
		return false, nil
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false, fmt.Errorf("proc: the descriptors of process %d cannot be read: %w", pid, err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if inode, ok := strings.CutPrefix(link, "socket:["); ok && inodes[strings.TrimSuffix(inode, "]")] {
			return true, nil
		}
	}
	return false, nil
}

type socket struct {
	ip    net.IP
	port  int
	inode string
}

// listening reads the sockets in LISTEN state (0A) of a /proc/net/tcp
// table: "sl local_address rem_address st ... inode", the local address
// as hex words in host byte order (little-endian here), the port in hex.
func listening(table string) ([]socket, error) {
	f, err := os.Open(table)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []socket
	sc := bufio.NewScanner(f)
	sc.Scan() // the heading
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || fs[3] != "0A" {
			continue
		}
		hexIP, hexPort, ok := strings.Cut(fs[1], ":")
		if !ok {
			continue
		}
		port, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil {
			continue
		}
		raw, err := hex.DecodeString(hexIP)
		if err != nil || (len(raw) != 4 && len(raw) != 16) {
			continue
		}
		// Each 32-bit word is in the kernel's (little-endian) order.
		ip := make(net.IP, len(raw))
		for w := 0; w < len(raw); w += 4 {
			ip[w], ip[w+1], ip[w+2], ip[w+3] = raw[w+3], raw[w+2], raw[w+1], raw[w]
		}
		out = append(out, socket{ip: ip, port: int(port), inode: fs[9]})
	}
	return out, sc.Err()
}
