package watch

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRecordingDirWritesNoLink: the recording's directory belongs to the
// JVM's user, who may put a link in it before the kit writes its settings
// there; as root the kit would then overwrite whatever the link names.
func TestRecordingDirWritesNoLink(t *testing.T) {
	d, err := newRecordingDir(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer d.remove()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(d.host, "bystander.jfc")); err != nil {
		t.Fatal(err)
	}
	if err := d.write("bystander.jfc", []byte("settings")); err == nil {
		t.Error("the settings were written through a link the directory's user put there")
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the file the link named now holds %q", b)
	}
	if err := d.write("JfrDigest.java", []byte("class X {}")); err != nil {
		t.Errorf("a new file: %v", err)
	}
}
