package watch

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeJDK is a JDK whose jfr, java and javac run the real ones, counting
// each compile of the digest in a file: a javac run, or java's source
// launcher given JfrDigest.java (which compiles it in memory). It returns
// its java and the count.
func fakeJDK(t *testing.T) (string, func() int) {
	t.Helper()
	need(t, "jfr", "java", "javac")
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	count := filepath.Join(dir, "compiles")
	for name, extra := range map[string]string{
		"jfr":   "",
		"java":  "case \"$*\" in *JfrDigest.java*) echo compile >> '" + count + "';; esac\n",
		"javac": "echo compile >> '" + count + "'\n",
	} {
		real, err := exec.LookPath(name)
		if err == nil {
			real, err = filepath.EvalSymlinks(real)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+extra+"exec '"+real+"' \"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(bin, "java"), func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "compile\n")
	}
}

// freshDigestCache points the kit's cache at a new directory, and says the
// cache's note again, for the test.
func freshDigestCache(t *testing.T) string {
	t.Helper()
	cache := filepath.Join(t.TempDir(), "cache")
	t.Setenv("BYSTANDER_CACHE", cache)
	digestSaid, javacFailed = false, false
	t.Cleanup(func() { digestSaid, javacFailed = false, false })
	return cache
}

// TestDigestCompiledOnce: two watches of a JVM compile the digest once
// (javac, into the kit's cache); the second runs the cached class, and both
// name the call. The cache is the kit user's, 0700; its jar is not
// writable by others.
func TestDigestCompiledOnce(t *testing.T) {
	need(t, "javac", "java", "jcmd", "jfr")
	pid := startJava(t, backend(t), 2, 0) // before PATH leads to the counting JDK
	java, compiles := fakeJDK(t)
	t.Setenv("PATH", filepath.Dir(java)+":"+os.Getenv("PATH"))
	cache := freshDigestCache(t)
	for i := range 2 {
		s := JFR(context.Background(), pid, Options{Window: 500 * time.Millisecond}).Clean()
		if len(s.Holds) == 0 || s.Holds[0].Frames[0].Function != "LedgerClient.balance" {
			t.Fatalf("watch %d: holds %+v; limits %q", i+1, s.Holds, s.Limits)
		}
		if len(s.Limits) > 0 {
			t.Errorf("watch %d: limits %q", i+1, s.Limits)
		}
	}
	if n := compiles(); n != 1 {
		t.Errorf("the digest was compiled %d times over two watches, want once", n)
	}
	dir := filepath.Join(cache, "watch")
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the digest's cache: %v %v", fi, err)
	}
	jars, _ := filepath.Glob(filepath.Join(dir, "JfrDigest-*.jar"))
	if len(jars) != 1 {
		t.Fatalf("cached: %q", jars)
	}
	if fi, err := os.Lstat(jars[0]); err != nil || fi.Mode().Perm()&0o022 != 0 {
		t.Errorf("the cached jar: %v %v", fi, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left in the cache: %q", left)
	}
}

// plantedJar is a jar that passes for the digest's: its class is a
// stranger's.
func plantedJar(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	w, err := z.Create(digestMain + ".class")
	if err == nil {
		_, err = w.Write([]byte("\xca\xfe\xba\xbe a stranger's class"))
	}
	if err == nil {
		err = z.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestDigestCacheRefused: a cache directory the kit did not make for
// itself alone (open to others, another user's, a link to a directory of
// the kit's user) may hold a stranger's class, which the kit, as root,
// would run: it is not read, the digest is compiled at this watch from
// the source (said once), and the directory is left as it is. A stranger's
// jar in the kit's own directory is replaced by a compiled one.
func TestDigestCacheRefused(t *testing.T) {
	java, compiles := fakeJDK(t)
	planted := plantedJar(t)
	for name, c := range map[string]struct {
		root bool
		make func(t *testing.T, dir string)
		want string
	}{
		"open to others": {make: func(t *testing.T, dir string) {
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}, want: "open to others"},
		"group's": {make: func(t *testing.T, dir string) {
			if err := os.Chmod(dir, 0o750); err != nil {
				t.Fatal(err)
			}
		}, want: "open to others"},
		"another user's": {root: true, make: func(t *testing.T, dir string) {
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, want: "belongs to uid 65534"},
		"a link": {make: func(t *testing.T, dir string) {
			elsewhere := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.Rename(dir, elsewhere); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, dir); err != nil {
				t.Fatal(err)
			}
		}, want: "is a link"},
	} {
		t.Run(name, func(t *testing.T) {
			if c.root {
				needRoot(t, "to give the directory to another user")
			}
			dir, jar := plantJar(t, java, planted, 0o600)
			c.make(t, dir)
			before := compiles()
			p := compiledDigest(context.Background(), java)
			if p.file != "JfrDigest.java" || !bytes.Equal(p.data, jfrDigest) {
				t.Errorf("ran %s (%d bytes) from a refused cache", p.file, len(p.data))
			}
			if !strings.Contains(p.note, c.want) || !strings.Contains(p.note, "compiled at every watch") {
				t.Errorf("said %q, want %q", p.note, c.want)
			}
			t.Logf("said %q", p.note)
			if again := compiledDigest(context.Background(), java); again.note != "" || again.file != "JfrDigest.java" {
				t.Errorf("the second watch: %s, said %q", again.file, again.note)
			}
			if n := compiles() - before; n != 0 {
				t.Errorf("javac ran %d times (the source launcher compiles at the watch)", n)
			}
			if b, err := os.ReadFile(jar); err != nil || !bytes.Equal(b, planted) {
				t.Errorf("the refused directory was changed: %v", err)
			}
		})
	}
	t.Run("a stranger's jar in the kit's directory", func(t *testing.T) {
		needRoot(t, "to give the jar to another user")
		_, jar := plantJar(t, java, planted, 0o644)
		if err := os.Chown(jar, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		before := compiles()
		p := compiledDigest(context.Background(), java)
		if p.file != "JfrDigest.jar" || bytes.Equal(p.data, planted) || p.note != "" {
			t.Errorf("ran %s, the planted jar: %v, said %q", p.file, bytes.Equal(p.data, planted), p.note)
		}
		if n := compiles() - before; n != 1 {
			t.Errorf("compiled %d times, want once", n)
		}
		var st syscall.Stat_t
		if b, err := os.ReadFile(jar); err != nil || !bytes.Equal(b, p.data) || syscall.Lstat(jar, &st) != nil || int(st.Uid) != os.Geteuid() {
			t.Errorf("the stranger's jar was not replaced by the kit's: %v", err)
		}
	})
}

// TestDigestRecompiled: the cached class is the source's and the JDK's: a
// changed source compiles again (each kept apart), as another javac is
// another name; the same source on the same JDK does not.
func TestDigestRecompiled(t *testing.T) {
	java, compiles := fakeJDK(t)
	cache := freshDigestCache(t)
	saved := jfrDigest
	t.Cleanup(func() { jfrDigest = saved })
	first := compiledDigest(context.Background(), java)
	if first.file != "JfrDigest.jar" || first.note != "" {
		t.Fatalf("compiled into %s, said %q", first.file, first.note)
	}
	if again := compiledDigest(context.Background(), java); !bytes.Equal(again.data, first.data) || compiles() != 1 {
		t.Errorf("the same source compiled %d times", compiles())
	}
	key := digestKey(java)
	jfrDigest = append(append([]byte{}, saved...), "\n// changed\n"...)
	if digestKey(java) == key {
		t.Fatal("a changed source has the same key")
	}
	if p := compiledDigest(context.Background(), java); p.file != "JfrDigest.jar" || compiles() != 2 {
		t.Errorf("a changed source: %s, compiled %d times in all, want 2", p.file, compiles())
	}
	if jars, _ := filepath.Glob(filepath.Join(cache, "watch", "JfrDigest-*.jar")); len(jars) != 2 {
		t.Errorf("cached: %q, want both", jars)
	}
	// Another javac in the same place (an upgraded JDK) is another name:
	// the jar it finds is not the one compiled before.
	changed := digestKey(java)
	javac := filepath.Join(filepath.Dir(java), "javac")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(javac, later, later); err != nil {
		t.Fatal(err)
	}
	if digestKey(java) == changed {
		t.Error("another javac has the same key")
	}
}

// TestDigestCacheUnwritable: a cache that cannot be made (here its path is
// a file's; a read-only home, a full disk) is said once, and each watch
// compiles the digest as it did before the cache: java's source launcher.
func TestDigestCacheUnwritable(t *testing.T) {
	java, compiles := fakeJDK(t)
	freshDigestCache(t)
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BYSTANDER_CACHE", file)
	p := compiledDigest(context.Background(), java)
	if p.file != "JfrDigest.java" || !strings.Contains(p.note, "compiled at every watch") {
		t.Errorf("ran %s, said %q", p.file, p.note)
	}
	if again := compiledDigest(context.Background(), java); again.file != "JfrDigest.java" || again.note != "" {
		t.Errorf("the second watch: %s, said %q (once is enough)", again.file, again.note)
	}
	if compiles() != 0 {
		t.Errorf("javac ran %d times", compiles())
	}
}

// plantJar writes data as the cached digest's jar for java in a fresh
// cache, with perm; it gives the cache's watch directory and the jar.
func plantJar(t *testing.T, java string, data []byte, perm os.FileMode) (dir, jar string) {
	t.Helper()
	dir = filepath.Join(freshDigestCache(t), "watch")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	jar = filepath.Join(dir, "JfrDigest-"+digestKey(java)+".jar")
	if err := os.WriteFile(jar, data, perm); err != nil {
		t.Fatal(err)
	}
	return dir, jar
}
