package pngtext

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"io"
	"strings"
	"testing"
)

// picture is a small PNG as image/png writes it: IHDR, IDAT, IEND.
func picture(t testing.TB) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	img.Set(1, 1, color.RGBA{200, 10, 10, 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestSetRead(t *testing.T) {
	orig := picture(t)
	b, err := Set(orig, Text{"bystander-source", "docs/run"}, Text{"bystander-made", "2026-12-03T19:10:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["bystander-source"] != "docs/run" || got["bystander-made"] != "2026-12-03T19:10:00Z" {
		t.Errorf("read back %q", got)
	}
	// The picture is the same picture.
	a, err := png.Decode(bytes.NewReader(orig))
	if err != nil {
		t.Fatal(err)
	}
	c, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the PNG with its texts does not decode: %v", err)
	}
	if a.At(1, 1) != c.At(1, 1) || a.Bounds() != c.Bounds() {
		t.Errorf("the picture changed")
	}
	// Set again: the keyword's chunk replaced, the other kept.
	b2, err := Set(b, Text{"bystander-made", "2026-12-04T00:00:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	got, err = Read(bytes.NewReader(b2))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["bystander-source"] != "docs/run" || got["bystander-made"] != "2026-12-04T00:00:00Z" {
		t.Errorf("set again: %q", got)
	}
	if len(b2) != len(b) {
		t.Errorf("set again: %d bytes, was %d (a chunk kept twice?)", len(b2), len(b))
	}
	// No texts: none read.
	got, err = Read(bytes.NewReader(orig))
	if err != nil || len(got) != 0 {
		t.Errorf("a PNG without texts: %q %v", got, err)
	}
}

func TestSetRefuses(t *testing.T) {
	p := picture(t)
	for _, tc := range []struct {
		png  []byte
		text Text
		why  string
	}{
		{[]byte("GIF89a"), Text{"k", "v"}, "not a PNG"},
		{p, Text{"", "v"}, "want 1 to 79"},
		{p, Text{strings.Repeat("k", 80), "v"}, "want 1 to 79"},
		{p, Text{" k", "v"}, "leading"},
		{p, Text{"k\x00", "v"}, "not printable"},
		{p, Text{"k", "a\x00b"}, "without NUL"},
		{p, Text{"k", "é"}, "ASCII"},
		{p[:len(p)-12], Text{"k", "v"}, "no IEND"},
	} {
		if _, err := Set(tc.png, tc.text); err == nil || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("Set(%q): %v, want %q", tc.text, err, tc.why)
		}
	}
	if _, err := Set(p, Text{"k", "1"}, Text{"k", "2"}); err == nil {
		t.Errorf("a keyword given twice was written")
	}
}

// chunk is one chunk's bytes, its length as said (said) and its CRC right.
func chunk(said uint32, typ string, data []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, said)
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crcOf(typ, data))
}

func crcOf(typ string, data []byte) uint32 {
	return binary.BigEndian.Uint32(appendChunk(nil, typ, data)[8+len(data):])
}

// TestReadRefuses: a stranger's PNG that says more than it has, more
// than the reader holds, or what tEXt does not allow is refused, and a
// chunk's said length is never allocated before it is read.
func TestReadRefuses(t *testing.T) {
	p := picture(t)
	ihdr := p[:8+25] // signature and IHDR (13 bytes of data)
	iend := p[len(p)-12:]
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	many := ihdr
	for i := range MaxChunks + 1 {
		many = join(many, chunk(3, "tEXt", []byte{'a' + byte(i%26), 'a' + byte(i/26), 0}))
	}
	bad := chunk(3, "tEXt", []byte("k\x00v"))
	bad[len(bad)-1] ^= 1
	for _, tc := range []struct {
		name string
		png  []byte
		why  string
	}{
		{"not a PNG", []byte("hello"), "not a PNG"},
		{"no IEND", p[:len(p)-12], "truncated"},
		{"IDAT first", join(p[:8], chunk(0, "IDAT", nil), iend), "not IHDR"},
		{"a huge tEXt", join(ihdr, binary.BigEndian.AppendUint32(nil, MaxText+1), []byte("tEXt")), "over the 65536"},
		{"over 2^31", join(ihdr, []byte{0x80, 0, 0, 0}, []byte("IDAT")), "over the PNG's"},
		{"a huge IDAT cut short", join(ihdr, []byte{0x7f, 0xff, 0xff, 0xff}, []byte("IDAT"), []byte("abc")), "truncated"},
		{"a tEXt cut short", join(ihdr, chunk(100, "tEXt", []byte("k\x00v"))), "truncated"},
		{"a bad CRC", join(ihdr, bad, iend), "CRC"},
		{"no NUL", join(ihdr, chunk(3, "tEXt", []byte("kvv")), iend), "without the NUL"},
		{"an empty keyword", join(ihdr, chunk(2, "tEXt", []byte("\x00v")), iend), "want 1 to 79"},
		{"an IEND with data", join(ihdr, chunk(1, "IEND", []byte("x"))), "want 0"},
		{"twice", join(ihdr, chunk(3, "tEXt", []byte("k\x00v")), chunk(3, "tEXt", []byte("k\x00w")), iend), "two tEXt chunks"},
		{"too many", join(many, iend), "more than 64"},
	} {
		if got, err := Read(bytes.NewReader(tc.png)); err == nil || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: %q %v, want %q", tc.name, got, err, tc.why)
		}
	}
	// A 2 GiB chunk said, 3 bytes there: read in a few small allocations,
	// not 2 GiB.
	huge := join(ihdr, []byte{0x7f, 0xff, 0xff, 0xff}, []byte("IDAT"), []byte("abc"))
	if n := testing.AllocsPerRun(5, func() { _, _ = Read(bytes.NewReader(huge)) }); n > 50 {
		t.Errorf("%v allocations reading a chunk said to be 2 GiB", n)
	}
	// Latin-1 text comes out as UTF-8.
	got, err := Read(bytes.NewReader(join(ihdr, chunk(3, "tEXt", []byte("k\x00\xe9")), iend)))
	if err != nil || got["k"] != "é" {
		t.Errorf("Latin-1: %q %v", got, err)
	}
}

// FuzzRead: whatever bytes come, Read returns (no panic, no hang), and what
// it accepts holds at most MaxChunks texts of allowed keywords, read no
// further than IEND; a PNG Set wrote reads back as written.
func FuzzRead(f *testing.F) {
	p := picture(f)
	f.Add(p)
	withText, err := Set(p, Text{"bystander-source", "docs/run"}, Text{"bystander-made", "2026-12-03T19:10:00Z"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(withText)
	f.Add(withText[:40])
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := &counting{r: bytes.NewReader(b)}
		got, err := Read(r)
		if err != nil {
			return
		}
		if len(got) > MaxChunks {
			t.Fatalf("%d texts", len(got))
		}
		for k := range got {
			if checkKey(k) != nil {
				t.Fatalf("keyword %q accepted", k)
			}
		}
		if !bytes.Equal(b[r.n-8:r.n-4], []byte{0, 0, 0, 0}) || string(b[r.n-4:r.n]) != "IEND" {
			t.Fatalf("accepted after reading %d bytes, not ending at IEND", r.n)
		}
		// Set and read again: the same texts, with one more.
		w, err := Set(b, Text{"bystander-made", "now"})
		if err != nil {
			return // what Read skips, Set may refuse (an IEND with data)
		}
		again, err := Read(bytes.NewReader(w))
		if err != nil || again["bystander-made"] != "now" {
			t.Fatalf("Set's PNG reads back as %q %v", again, err)
		}
		for k, v := range got {
			if k != "bystander-made" && again[k] != v {
				t.Fatalf("%q was %q, after Set %q", k, v, again[k])
			}
		}
	})
}

type counting struct {
	r io.Reader
	n int
}

func (c *counting) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += n
	return n, err
}
