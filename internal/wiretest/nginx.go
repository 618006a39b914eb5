package wiretest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Nginx starts Debian's nginx (nginx-light) with the given number of
// workers, answering /fast with "fast\n" (the reference server the kit's
// CPU figures are set against), and returns its address and the master's
// PID (its workers are its children). ok is false, with a log line, when
// nginx is not installed (apt-get install nginx-light).
func Nginx(tb testing.TB, workers int) (addr string, pid int, ok bool) {
	tb.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if _, e := os.Stat("/usr/sbin/nginx"); e == nil {
			bin, err = "/usr/sbin/nginx", nil
		}
	}
	if err != nil {
		tb.Log("nginx is not installed (apt-get install nginx-light): measured without it")
		return "", 0, false
	}
	dir := tb.TempDir()
	addr = FreeAddr(tb)
	conf := fmt.Sprintf(`daemon off; master_process %[3]s; worker_processes %[4]d; pid %[1]s/nginx.pid;
error_log %[1]s/error.log; events { worker_connections 1024; }
http { access_log off; keepalive_requests 1000000;
  client_body_temp_path %[1]s; proxy_temp_path %[1]s; fastcgi_temp_path %[1]s; uwsgi_temp_path %[1]s; scgi_temp_path %[1]s;
  server { listen %[2]s; location /fast { default_type text/plain; return 200 "fast\n"; } } }
`, dir, addr, map[bool]string{true: "off", false: "on"}[workers == 1], workers)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	// TERM, not KILL: the master then stops its workers instead of orphaning them.
	tb.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if i > 100 {
			tb.Fatalf("nginx did not listen on %s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return addr, cmd.Process.Pid, true
}
