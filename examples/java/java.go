// Package java carries the published Netty-vs-Tomcat experiment's own
// servers, a Netty 4.1 server (NettyServer.java) and an embedded Tomcat 10.1
// server (TomcatServer.java), both speaking the endpoint protocol, with the
// script that builds them from Debian's packages only (build.sh: javac over
// the jars in /usr/share/java, no Maven or Gradle). The sources are embedded,
// so the kit builds them wherever it runs, once per change of the sources.
// Program builds other Java sources against the same jars the same way
// (examples/services' shop).
package java

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

//go:embed *.java build.sh
var sources embed.FS

// Install is the one command that installs what the servers need.
const Install = "apt-get install -y openjdk-17-jdk-headless libnetty-java libtomcat10-java"

// Jars is where Debian's packages put the jars (BYSTANDER_JAVA_JARS moves it).
func Jars() string {
	if d := os.Getenv("BYSTANDER_JAVA_JARS"); d != "" {
		return d
	}
	return "/usr/share/java"
}

// Missing says what is missing to build and run the servers, or "".
func Missing() string {
	var miss []string
	for _, c := range []string{"java", "javac"} {
		if _, err := exec.LookPath(c); err != nil {
			miss = append(miss, c)
		}
	}
	for _, j := range []string{"netty-codec-http", "tomcat10-catalina"} {
		if _, err := os.Stat(filepath.Join(Jars(), j+".jar")); err != nil {
			miss = append(miss, filepath.Join(Jars(), j+".jar"))
		}
	}
	if len(miss) == 0 {
		return ""
	}
	return fmt.Sprintf("%s missing: %s", strings.Join(miss, ", "), Install)
}

// Launchers are the programs Build makes in its directory, by server.
var Launchers = map[string]string{"netty": "nettyserver", "tomcat": "tomcatserver"}

// A Program is Java sources that build.sh compiles against Debian's Netty
// and Tomcat jars, and the launchers it writes: each an executable script
// that execs java on one main class, so the launcher's PID is the JVM's.
type Program struct {
	// Sources holds the .java files at its root (anything else is copied
	// too, and counts in the build's stamp).
	Sources fs.FS
	// Launchers maps a launcher's file name to its main class
	// ("shopserver": "shop.ShopServer").
	Launchers map[string]string
}

// servers is the published experiment's servers (Launchers' programs).
var servers = Program{Sources: sources, Launchers: map[string]string{
	Launchers["netty"]: "bystander.NettyServer", Launchers["tomcat"]: "bystander.TomcatServer"}}

// Build builds the servers into dir (dir/nettyserver and dir/tomcatserver)
// unless dir already holds a build of these sources. It returns whether it
// compiled.
func Build(ctx context.Context, dir string) (bool, error) { return servers.Build(ctx, dir) }

// UpToDate says whether dir holds a build of the servers' sources.
func UpToDate(dir string) bool { return servers.UpToDate(dir) }

// Build builds p into dir (its classes, and a launcher per entry of
// p.Launchers) with build.sh, unless dir already holds a build of these
// sources. It returns whether it compiled.
func (p Program) Build(ctx context.Context, dir string) (bool, error) {
	if m := Missing(); m != "" {
		return false, fmt.Errorf("java: %s", m)
	}
	stamp, err := p.stamp()
	if err != nil {
		return false, err
	}
	if p.UpToDate(dir) {
		return false, nil
	}
	src := filepath.Join(dir, "src")
	if err := os.RemoveAll(src); err != nil {
		return false, fmt.Errorf("java: %w", err)
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		return false, fmt.Errorf("java: %w", err)
	}
	if err := os.CopyFS(src, p.Sources); err != nil {
		return false, fmt.Errorf("java: %w", err)
	}
	script, err := sources.ReadFile("build.sh")
	if err != nil {
		return false, fmt.Errorf("java: %w", err)
	}
	if err := os.WriteFile(filepath.Join(src, "build.sh"), script, 0o755); err != nil {
		return false, fmt.Errorf("java: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false, fmt.Errorf("java: %w", err)
	}
	args := []string{filepath.Join(src, "build.sh"), abs}
	for _, name := range slices.Sorted(maps.Keys(p.Launchers)) {
		args = append(args, name+"="+p.Launchers[name])
	}
	cmd := exec.CommandContext(ctx, "bash", args...)
	// The build never outlives the process that started it: bash dies
	// with it (and build.sh's watcher then ends javac). The parent-death
	// signal follows the thread that started the child, so that thread
	// stays this goroutine's until the child ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// Ended (the run interrupted), bash leaves javac holding its output
	// until build.sh's watcher ends it: that wait is bounded.
	cmd.WaitDelay = time.Second
	runtime.LockOSThread()
	out, err := cmd.CombinedOutput()
	runtime.UnlockOSThread()
	if err != nil {
		return false, fmt.Errorf("java: build.sh: %v\n%s", err, strings.TrimSpace(string(out)))
	}
	if !p.built(dir) {
		return false, fmt.Errorf("java: build.sh made no launchers in %s", dir)
	}
	return true, os.WriteFile(filepath.Join(dir, "stamp"), []byte(stamp), 0o644)
}

// stamp names a build: the sources' and build.sh's hash, the launchers,
// and where the jars were.
func (p Program) stamp() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(p.Sources, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(p.Sources, path)
		fmt.Fprintf(h, "%s %d\n", path, len(b))
		h.Write(b)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("java: %w", err)
	}
	script, err := sources.ReadFile("build.sh")
	if err != nil {
		return "", fmt.Errorf("java: %w", err)
	}
	fmt.Fprintf(h, "build.sh %d\n", len(script))
	h.Write(script)
	for _, name := range slices.Sorted(maps.Keys(p.Launchers)) {
		fmt.Fprintf(h, "launcher %s=%s\n", name, p.Launchers[name])
	}
	// The database's jars join the launchers' classpath when installed: a
	// build from before they were is not this one.
	return hex.EncodeToString(h.Sum(nil)) + " " + Jars() + " db=" + strconv.FormatBool(MissingDB() == "") + "\n", nil
}

// InstallDB installs what --db-url needs (the kit's --block-mode postgres).
const InstallDB = "apt-get install -y libhikaricp-java libpostgresql-jdbc-java"

// MissingDB says what the servers miss to call a database (HikariCP and
// the PostgreSQL JDBC driver), or "".
func MissingDB() string {
	var miss []string
	for _, j := range []string{"HikariCP", "postgresql"} {
		if _, err := os.Stat(filepath.Join(Jars(), j+".jar")); err != nil {
			miss = append(miss, filepath.Join(Jars(), j+".jar"))
		}
	}
	if len(miss) == 0 {
		return ""
	}
	return fmt.Sprintf("%s missing: %s", strings.Join(miss, ", "), InstallDB)
}

// JDBCURL turns a PostgreSQL URL (postgres://USER@HOST:PORT/DB?...) into
// the JDBC driver's (jdbc:postgresql://HOST:PORT/DB?user=USER&...). A URL
// with a password is refused: the JDBC URL goes in the server's argv,
// which every local user can read; the servers take the password from
// PGPASSWORD.
func JDBCURL(pg string) (string, error) {
	u, err := url.Parse(pg)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return "", errors.New("java: the database URL is not a postgres:// URL")
	}
	q := u.Query()
	if _, ok := u.User.Password(); ok || q.Has("password") {
		return "", errors.New("java: the database URL carries a password: the servers take it from PGPASSWORD, never from their arguments")
	}
	if u.User != nil {
		q.Set("user", u.User.Username())
	}
	return "jdbc:postgresql://" + u.Host + u.EscapedPath() + "?" + q.Encode(), nil
}

// UpToDate says whether dir holds a build of p's sources.
func (p Program) UpToDate(dir string) bool {
	stamp, err := p.stamp()
	if err != nil {
		return false
	}
	b, err := os.ReadFile(filepath.Join(dir, "stamp"))
	return err == nil && string(b) == stamp && p.built(dir)
}

func (p Program) built(dir string) bool {
	for name := range p.Launchers {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}
