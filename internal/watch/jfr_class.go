package watch

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/files"
	"github.com/bystander-kit/bystander/internal/outside"
)

// The digest compiled once: JfrDigest.java compiled by the JDK's javac
// into a jar kept in the kit's cache (files.CacheDir, in watch/), named by
// the source's hash and the JDK's, and copied into each recording's
// directory. Java's source launcher (java JfrDigest.java) compiled it at
// every watch: about a second of a core before the recording was read.
//
// The kit may run as root and run the digest as itself: the cache is a
// directory the kit makes for its user alone (0700), read through its
// descriptor once checked; one another user owns or may write, or a link,
// may hold a stranger's class and is not read. The digest is then, as
// where the cache cannot be made (a read-only home, a full disk), compiled
// at the watch by the source launcher, and that is said once.

const (
	digestMain = "JfrDigest"
	// maxDigestJar caps the cached jar read (the digest's is 4 kB).
	maxDigestJar = 1 << 20
	// javacLimit bounds the compile.
	javacLimit = 2 * time.Minute
	// keepDigest is how long a jar of another source or JDK is kept unused.
	keepDigest = 7 * 24 * time.Hour
)

// digestProgram is the digest as java runs it from the recording's
// directory: the file written there (the compiled jar, or the source for
// the source launcher) and why the cache was not used ("" once said).
type digestProgram struct {
	file string
	data []byte
	note string
	cpu  int64 // javac's, when it compiled
}

// args are java's arguments that run the program from dir.
func (p digestProgram) args(dir string) []string {
	path := filepath.Join(dir, p.file)
	if strings.HasSuffix(p.file, ".jar") {
		return []string{"-cp", path, digestMain}
	}
	return []string{path}
}

var (
	// digestMu makes one compile at a time in a process.
	digestMu sync.Mutex
	// digestSaid says a cache not used was said (once a process).
	digestSaid bool
	// javacFailed says javac failed once: the process does not ask again.
	javacFailed bool
)

// compiledDigest is the digest for the JDK of java: the cached jar, else
// compiled with the javac beside java and cached; the source when there
// is no javac or the cache cannot be used (said once).
func compiledDigest(ctx context.Context, java string) digestProgram {
	digestMu.Lock()
	defer digestMu.Unlock()
	src := digestProgram{file: digestMain + ".java", data: jfrDigest}
	javac := filepath.Join(filepath.Dir(java), "javac")
	if _, err := os.Stat(javac); err != nil || javacFailed {
		return src // a JDK without javac: the source launcher, as before the cache
	}
	say := func(p digestProgram, why error) digestProgram {
		if !digestSaid {
			digestSaid = true
			p.note = why.Error()
		}
		return p
	}
	root, err := digestCache()
	if err != nil {
		return say(src, err)
	}
	defer root.Close()
	name := digestMain + "-" + digestKey(java) + ".jar"
	if b, err := readDigestJar(root, name); err == nil {
		now := time.Now()
		_ = root.Chtimes(name, now, now) // in use: not pruned
		return digestProgram{file: digestMain + ".jar", data: b}
	}
	jar, cpu, err := compileDigest(ctx, javac)
	if err != nil {
		javacFailed = true
		src = say(src, err)
		src.cpu = cpu
		return src
	}
	p := digestProgram{file: digestMain + ".jar", data: jar, cpu: cpu}
	if err := writeDigestJar(root, name, jar); err != nil {
		return say(p, fmt.Errorf("watch: the compiled digest not kept in %s (%v): JfrDigest.java is compiled at every watch", root.Name(), err))
	}
	pruneDigests(root, name)
	return p
}

// digestKey names what makes the class: the source, and the JDK (its
// directory, its release file, its java and javac).
func digestKey(java string) string {
	h := sha256.New()
	fmt.Fprintf(h, "JfrDigest.java %d\n", len(jfrDigest))
	h.Write(jfrDigest)
	bin := filepath.Dir(java)
	release, _ := files.ReadCapped(filepath.Join(filepath.Dir(bin), "release"), 64<<10)
	fmt.Fprintf(h, "\njdk %s\nrelease %d\n", filepath.Dir(bin), len(release))
	h.Write(release)
	for _, p := range []string{java, filepath.Join(bin, "javac")} {
		if fi, err := os.Stat(p); err == nil {
			fmt.Fprintf(h, "\n%s %d %d", p, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// digestCache opens the digest's cache directory, made 0700 if missing:
// it must be a directory (not a link) the kit's user owns that no one
// else may enter. It is used through its descriptor, so that a directory
// put in its place once it is checked is never read.
func digestCache() (*os.Root, error) {
	dir := filepath.Join(files.CacheDir(), "watch")
	unusable := func(why string) error {
		return fmt.Errorf("watch: the digest's cache %s %s: JfrDigest.java is compiled at every watch", dir, why)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, unusable(fmt.Sprintf("cannot be made (%v)", cause(err)))
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, unusable(fmt.Sprintf("cannot be made (%v)", cause(err)))
	}
	refused := func(why string) error {
		return unusable(why + ", not read (a stranger could have put a class there for the kit to run; removed, the kit makes it anew)")
	}
	seen, err := os.Lstat(dir)
	switch {
	case err != nil:
		return nil, unusable(fmt.Sprintf("cannot be read (%v)", cause(err)))
	case seen.Mode()&fs.ModeSymlink != 0:
		return nil, refused("is a link")
	case !seen.IsDir():
		return nil, refused("is not a directory")
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, unusable(fmt.Sprintf("cannot be opened (%v)", cause(err)))
	}
	opened, err := root.Stat(".")
	why := ""
	switch {
	case err != nil:
		why = fmt.Sprintf("cannot be read (%v)", err)
	case !os.SameFile(seen, opened):
		why = "was replaced as it was opened"
	default:
		why = files.NotOwn(opened, 0o077)
	}
	if why != "" {
		root.Close()
		return nil, refused(why)
	}
	return root, nil
}

// cause is a path's error without its path (said once, beside it).
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readDigestJar reads the cached jar name: a regular file of the kit's
// user that no one else may write, of at most maxDigestJar bytes, a jar
// that holds the digest's class.
func readDigestJar(root *os.Root, name string) ([]byte, error) {
	seen, err := root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !seen.Mode().IsRegular() || seen.Size() > maxDigestJar {
		return nil, fmt.Errorf("watch: %s is not a jar of the kit's", name)
	}
	if why := files.NotOwn(seen, 0o022); why != "" {
		return nil, fmt.Errorf("watch: %s %s", name, why)
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if opened, err := f.Stat(); err != nil || !os.SameFile(seen, opened) {
		return nil, fmt.Errorf("watch: %s was replaced as it was opened", name)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxDigestJar+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxDigestJar {
		return nil, fmt.Errorf("watch: %s grew past %d bytes", name, maxDigestJar)
	}
	z, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("watch: %s: %v", name, err)
	}
	for _, e := range z.File {
		if e.Name == digestMain+".class" {
			return b, nil
		}
	}
	return nil, fmt.Errorf("watch: %s holds no %s.class", name, digestMain)
}

// writeDigestJar writes the jar as name into the cache whole or not at
// all: a new file (never one there, nor through a link) renamed into
// place.
func writeDigestJar(root *os.Root, name string, jar []byte) error {
	tmp := "." + name + "." + rand.Text() + ".tmp"
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(jar)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}

// pruneDigests removes the jars of other sources or JDKs (and files a
// write left) unused for keepDigest.
func pruneDigests(root *os.Root, keep string) {
	d, err := root.Open(".")
	if err != nil {
		return
	}
	entries, _ := d.ReadDir(-1)
	d.Close()
	for _, e := range entries {
		n := e.Name()
		if n == keep || !strings.HasPrefix(strings.TrimPrefix(n, "."), digestMain+"-") {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > keepDigest {
			_ = root.Remove(n)
		}
	}
}

// compileDigest compiles the digest with javac in a fresh directory of
// the kit's, and returns its classes as a jar, and javac's CPU.
func compileDigest(ctx context.Context, javac string) ([]byte, int64, error) {
	tmp, err := os.MkdirTemp("", "bystander-javac-")
	if err != nil {
		return nil, 0, fmt.Errorf("watch: no directory to compile the digest in (%v): JfrDigest.java is compiled at every watch", err)
	}
	defer os.RemoveAll(tmp)
	src, classes := filepath.Join(tmp, digestMain+".java"), filepath.Join(tmp, "classes")
	if err := errors.Join(os.WriteFile(src, jfrDigest, 0o600), os.Mkdir(classes, 0o700)); err != nil {
		return nil, 0, fmt.Errorf("watch: the digest's source not written (%v): JfrDigest.java is compiled at every watch", err)
	}
	ctx, cancel := context.WithTimeout(ctx, javacLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, javac, "-encoding", "UTF-8", "-nowarn", "-d", classes, src)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 500 * time.Millisecond
	var out bytes.Buffer
	cmd.Stdout = &limitedBuffer{b: &out, max: 4096}
	cmd.Stderr = cmd.Stdout
	err = cmd.Run()
	var cpu int64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			cpu = ru.Utime.Nano() + ru.Stime.Nano()
		}
	}
	if err != nil {
		return nil, cpu, fmt.Errorf("watch: javac did not compile the digest (%v): %s; JfrDigest.java is compiled at every watch", err, outside.Reason(out.String()))
	}
	jar, err := jarOf(classes)
	if err != nil {
		return nil, cpu, fmt.Errorf("watch: the compiled digest not read (%v): JfrDigest.java is compiled at every watch", err)
	}
	return jar, cpu, nil
}

// jarOf is a jar of the class files javac wrote in dir (regular files
// only), in name order, without times: the same classes give the same jar.
func jarOf(dir string) ([]byte, error) {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".class") {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		class, err := files.ReadRegular(p, maxDigestJar)
		if err != nil {
			return err
		}
		w, err := z.CreateHeader(&zip.FileHeader{Name: filepath.ToSlash(rel), Method: zip.Deflate})
		if err == nil {
			_, err = w.Write(class)
		}
		return err
	})
	if err == nil {
		err = z.Close()
	}
	if err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
